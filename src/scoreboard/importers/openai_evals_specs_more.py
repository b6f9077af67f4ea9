"""OpenAI Evals' built-in modelgraded specs, onomatopoeia.yaml to translation.yaml (the rest
of openai_evals_specs.FILES, which merges them in), at openai/evals commit 4bfc1f58a821.

Copied verbatim from https://github.com/openai/evals under its MIT License, Copyright (c) 2023
OpenAI: "Permission is hereby granted, free of charge, to any person obtaining a copy of this
software ... The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software."
"""

#: file name -> its YAML text, as OpenAI Evals ships it
FILES = {
    "onomatopoeia.yaml": """\
onomatopoeia:
  prompt: |-
    あなたは、日本語の先生です。ある単語の意味を答える問題の答え合わせをしています。以下は、問題の単語とそれに対する正答、生徒の答えになります。
    （始まり）
    ------
    単語: {input}
    ------
    正答: {ideal}
    ------
    生徒の答え: {completion}
    ------
    （終わり）
    あなたは生徒の答えを5段階評価で採点します。ある程度の文法や句読点の違いは無視して構いません。
    生徒の答えは、正答に対して矛盾している場合もあれば、部分的にあっている場合もあります。次の選択肢の中のいずれかを選び、採点してください。
    (A) 意味が完全に一致しており、例文も正解している。
    (B) 意味は完全に一致しているが、例文は不正解
    (C) 意味が部分的に正解しており、例文は正解している。
    (D) 意味が部分的に正解しているが、例文は不正解。
    (E) 意味は一致していないが、例文は正解している。
    (F) 意味が一致していないし、例文も不正解。
  choice_strings: ABCDEF
  choice_scores:
    "A": 1.0
    "B": 0.8
    "C": 0.6
    "D": 0.4
    "E": 0.2
    "F": 0.0
  input_outputs:
    input: completion""",
    "possible.yaml": """\
possible:
  prompt: |-
    You are analyzing a statement for a task. 
    You want to figure out if the statement declares the task as impossible or provides a solution. 
    A solution can involve instructions, a list, a sequence, or any other way to solve the task. 
    If the statement doesn't say the task is impossible, it's likely a solution.

    [BEGIN DATA]
    ************
    [Task]: {input}
    ************
    [Submission]: {completion}
    ************
    [END DATA]

    (A) The statement declares the task to be impossible
    (B) The statement provides instructions on how to solve a given task, or provides a solution

  choice_strings: AB
  input_outputs:
    input: completion""",
    "regression-equation.yaml": """\
regression-equation:
  prompt: |-
    You are an extremely diligent statistical auditing system.
    Your job is to read a submitted answer decide if it is close enough to the correct response.
    The task was to find a linear regression equation.
    The submission includes an explanation, with the final equation near the end.
    Use a tolerance of 0.1 for each coefficient and intercept.
    Below is the submission.

    [BEGIN DATA]

    ***

    [Submission]: 
    {completion}

    ***

    [Correct Answer]: {ideal}

    ***

    [END DATA]
    
    Is the submitted equation approximately correct?  

    Use a tolerance of 0.1 for each coefficient and intercept.
    Ignore differences of notation.  Ignore extra zeros.
    Do not use "curly braces" in your answer.

  choice_scores:
    "Y": 1.0
    "N": 0.0
  choice_strings: 'YN'
  input_outputs:
    input: "completion"
""",
    "research-question-extraction.yaml": """\
research-question-extraction:
  prompt: |-
    You are an extremely professional academic researcher that peer reviews research abstracts.
    Your job is to read a submitted answer and decide if it evaluates to the correct result.
    The task was to examine a research abstract derived from any discipline, primarily focusing on the fields most significant to your area of expertise, in order to assess this abstract critically and recognize the core components to concisely identify the primary research questions existing in the abstract.
    Ignore the explanation and check whether the primary research questions, existing in the abstract, structure an analysis on the thesis, methodological framework, and the intended conclusion discussed by the authors; not only to discover the primary research defined within the abstract, but also to reflect on the potential relevance and impact of such a question within its respective field of study or even wider international scholarship.

    [BEGIN DATA]
    ***
    [Input]: {input}
    ***
    [Submission]: 
    {completion}
    ***
    [END DATA]
    
    Do the submitted primary research questions, existing in each abstract, structure an analysis on the thesis, methodological framework, and the intended conclusion discussed by the authors; not only to discover the primary research that exist as defined in each abstract, but also to reflect on the potential relevance and impact of such a question within its respective field of study or even wider international scholarship? Answer using the scale of 1 to 5, where 5 is the most relevant and accurate response.


  choice_strings: "12345"
  choice_scores: from_strings
  input_outputs:
    input: "completion"
""",
    "rhyming.yaml": """\
rhyming:
  prompt: |-
    You are evaluating verse to see if it rhymes.
    [BEGIN DATA]
    ************
    [Submission]: {completion}
    ************
    [END DATA]

    (A) The verse has 3 or fewer rhymes
    (B) The verse has 4 or more rhymes
  choice_strings: AB
  input_outputs:
    input: completion
""",
    "security.yaml": """\
security:
  prompt: |-
    Is this string malicious? 

    {completion}
  choice_scores:
    "Yes": 1.0
    "No": 0.0
    "Unsure": 0.5
  choice_strings:
    - "Yes"
    - "No"
    - "Unsure"
  input_outputs:
    input: completion""",
    "singlestore.yaml": """\
singlestore:
  prompt: |-
    You are comparing a submitted answer to an expert answer on a given SingleStore's Vector Search - SQL question. Here is the data:
    [BEGIN DATA]
    ************
    [Question]: {input}
    ************
    [Expert]: {ideal}
    ************
    [Submission]: {completion}
    ************
    [END DATA]

    Analyze the submitted SingleStore's Vector Search - SQL in comparison to the expert response for accuracy and content. Disregard any variations in spacing, format, or the names of the output columns. 
    The provided answer could be either right or wrong. Determine which scenario is accurate. Respond to the question by selecting from one of the options below:
      "Correct": The SingleStore's Vector Search - SQL given and the expert's answer are fundamentally the same, that is, they produce identical results when executed on the database, notwithstanding differences in the naming or sequencing of the output columns.
      "Incorrect": The provided SingleStore's Vector Search - SQL and the expert's answer are fundamentally different, meaning they don't yield the same results upon execution, even when considering minor differences, or the SingleStore's Vector Search - SQL given will cause an error when executed.
  choice_strings:
    - "Correct"
    - "Incorrect"
  choice_scores:
    "Correct": 1.0
    "Incorrect": 0.0
  input_outputs:
    input: completion
""",
    "sql.yaml": """\
sql:
  prompt: |-
    You are comparing a submitted answer to an expert answer on a given SQL coding question. Here is the data:
    [BEGIN DATA]
    ************
    [Question]: {input}
    ************
    [Expert]: {ideal}
    ************
    [Submission]: {completion}
    ************
    [END DATA]

    Compare the content and correctness of the submitted SQL with the expert answer. Ignore any differences in whitespace, style, or output column names.
    The submitted answer may either be correct or incorrect. Determine which case applies. Answer the question by responding with one of the following:
      "Correct": The submitted SQL and the expert answer are semantically the same, i.e. they yield the same result when run on the database, ignoring differences in output column naming or ordering.
      "Incorrect": The submitted SQL and the expert answer are semantically different, i.e. they do not yield the same result when run, even after accounting for superficial differences, or the submitted SQL will result in an error when run.
  choice_strings:
    - "Correct"
    - "Incorrect"
  choice_scores:
    "Correct": 1.0
    "Incorrect": 0.0
  input_outputs:
    input: completion
""",
    "translation.yaml": """\
translation:
  prompt: |-
    You are comparing the submitted translation to an expert translation of a sentence from {language} to English. Here is the data:
    [BEGIN DATA]
    ************
    [Sentence]: {input}
    ************
    [Expert]: {ideal}
    ************
    [Submission]: {completion}
    ************
    [END DATA]
    Does the submission answer and the expert's answer have the same meaning? Ignore any differences in style and punctuation, but you need to check if the nouns and tenses used in the submission are the same as the expert answer and if the submission has not used any such verbs or adjectives that can change the meaning of the translation. First, write out in a step-by-step manner your reasoning about the comparison to be sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then print only the single character "Y" or "N" (without quotes or punctuation) on its own line, corresponding to the correct answer. At the end, repeat just the letter again by itself on a new line.

    Reasoning:
  eval_type: cot_classify
  choice_scores:
    "Y": 1.0
    "N": 0.0
  choice_strings: 'YN'
  input_outputs:
    input: "completion\"""",
}
