"""OpenAI Evals' built-in modelgraded specs (evals/registry/modelgraded/*.yaml at openai/evals
commit 4bfc1f58a821), which every OpenAI Evals registry can name (`modelgraded_spec: fact`).

Copied verbatim from https://github.com/openai/evals under its MIT License, Copyright (c) 2023
OpenAI: "Permission is hereby granted, free of charge, to any person obtaining a copy of this
software ... The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software."
"""

from .openai_evals_specs_more import FILES as MORE_FILES

#: file name -> its YAML text, as OpenAI Evals ships it (onomatopoeia.yaml onwards in
#: openai_evals_specs_more.py, so each module stays short)
FILES = {
    "arithmetic-expression.yaml": """\
arithmetic-expression:
  prompt: |-
    You are an extremely diligent auditing system of arithmetic expressions.
    Your job is to read a submitted answer and decide if it evaluates to the correct result.
    The task was to find a arithmetic expression using four numbers, each exactly once, and that evaluates to a given result.
    The submission includes an explanation, with the final expression near the end.
    Ignore the explanation and check whether the arithmetic expression uses all four numbers exactly once and evaluates to the desired result.
    Below is the submission.

    [BEGIN DATA]
    ***
    [Input]: {input}
    ***
    [Submission]: 
    {completion}
    ***
    [END DATA]
    
    Does the submitted arithmetic expression use all four numbers exactly once and evaluate to the correct result?
    Do not use "curly braces" in your answer.

  choice_scores:
    "Y": 1.0
    "N": 0.0
  choice_strings: 'YN'
  input_outputs:
    input: "completion"
""",
    "battle.yaml": """\
battle:
  prompt: |-
    You are comparing two responses to the following two instructions.

    [Instruction 1]
    {input1}
    [Response 1]
    {completion1}

    [Instruction 2]
    {input2}
    [Response 2]
    {completion2}


    Is the first response better than the second? You must provide one answer based on your subjective view.
  choice_strings:
    - "Yes"
    - "No"
  choice_scores:
    "Yes": 1.0
    "No": 0.0
  input_outputs:
    input1: completion1
    input2: completion2""",
    "best.yaml": """\
best:
  prompt: |-
    Which of the following {n} texts is the best response to the following instruction?

    Instruction: {input}

    Responses:
    {completion}
  choice_strings: from_n
  input_outputs:
    input: completion
  output_template: "{i}. {output}\\n"
""",
    "closedqa.yaml": """\
closedqa:
  prompt: |-
    You are assessing a submitted answer on a given task based on a criterion. Here is the data:
    [BEGIN DATA]
    ***
    [Task]: {input}
    ***
    [Submission]: {completion}
    ***
    [Criterion]: {criteria}
    ***
    [END DATA]
    Does the submission meet the criterion? First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then print only the single character "Y" or "N" (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the letter again by itself on a new line.

    Reasoning:
  eval_type: cot_classify
  choice_scores:
    "Y": 1.0
    "N": 0.0
  choice_strings: 'YN'
  input_outputs:
    input: "completion\"""",
    "diversity.yaml": """\
diversity:
  prompt: |-
    Are the following {n} texts diverse?

    {completion}
  choice_scores:
    "Yes": 1.0
    "No": 0.0
  choice_strings:
    - "Yes"
    - "No"
  input_outputs:
    input: completion
  output_template: "{i}. {output}\\n"
""",
    "fact.yaml": """\
fact:
  prompt: |-
    You are comparing a submitted answer to an expert answer on a given question. Here is the data:
    [BEGIN DATA]
    ************
    [Question]: {input}
    ************
    [Expert]: {ideal}
    ************
    [Submission]: {completion}
    ************
    [END DATA]

    Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, grammar, or punctuation.
    The submitted answer may either be a subset or superset of the expert answer, or it may conflict with it. Determine which case applies. Answer the question by selecting one of the following options:
    (A) The submitted answer is a subset of the expert answer and is fully consistent with it.
    (B) The submitted answer is a superset of the expert answer and is fully consistent with it.
    (C) The submitted answer contains all the same details as the expert answer.
    (D) There is a disagreement between the submitted answer and the expert answer.
    (E) The answers differ, but these differences don't matter from the perspective of factuality.
  choice_strings: ABCDE
  input_outputs:
    input: completion
""",
    "humor.yaml": """\
humor:
  prompt: |-
    Is the following funny? 

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
    input: completion

humor_out_message:
  prompt: |-
    Was the assistant's (your) last response above to the user funny?
  choice_scores:
    "Yes": 1.0
    "No": 0.0
    "Unsure": 0.5
  choice_strings:
    - "Yes"
    - "No"
    - "Unsure"
  format_type: out_message
  input_outputs:
    input: completion

humor_likert:
  prompt: |-
    Is the following funny?

    {completion}

    Answer using the scale of 1 to 5, where 5 is the funniest.
  choice_strings: "12345"
  choice_scores: from_strings
  input_outputs:
    input: completion

humor_jp:
  prompt: |-
    以下の文章って面白い？

    （始まり）

    {completion}

    （終わり）

    ５段階の中から選んでください。
    
    1. 退屈 - このレベルの面白さはほとんど感じられず、退屈で時間が過ぎるのが遅いと感じるでしょう。興味を惹かれる要素がほとんどなく、全体的に魅力に欠けます。

    2. やや面白い - このレベルでは、若干の面白さが感じられますが、それでも十分ではありません。物語性やコンセプトには一定の魅力があるものの、期待外れであり、時間を過ごすにはまだ物足りないかもしれません。

    3. まあまあ面白い - このレベルの面白さは、平均的で満足できる範囲です。ある程度の興味深い要素やストーリーがあり、時間を過ごすのに適していますが、特別印象に残るものではないかもしれません。

    4. 面白い - このレベルでは、かなりの面白さが感じられ、魅力的なストーリーやキャラクターが存在します。多くの人が楽しめる内容であり、興味を持続させる要素が豊富に含まれています。ただし、最高の評価には僅かに及ばない部分が残っています。

    5. 大変面白い - このレベルの面白さは、非常に優れており、観る者を魅了し、心に強く残る体験ができます。独創的なストーリーや魅力的なキャラクターが際立ち、多くの人が共感や感動を覚えるでしょう。このレベルの面白さは、他のものと比較しても突出していると言えます。
  choice_scores: from_strings
  choice_strings: "12345"
  input_outputs:
    input: completion""",
    "iambic_pentameter.yaml": """\
iambic_pentameter:
  prompt: |-
    Does the following text strictly adhere to iambic pentameter?

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
    input: completion
""",
    "keywords.yaml": """\
seo_keywords:
  prompt: |-
    You are an SEO expert. Your job is to determine if the submitted keywords are comma separated and related to the provided topic and can be used to achieve good SEO.
    -----------------
    The input:
    "{input}"
    -----------------
    This is the keywords string:
    "{completion}"
    -----------------
    Give one point per check:
    - Check exactly the format of the keyword string. Are the keywords separated only by comma, no hyphens, no dashes, no numbers, no line breaks?
    - Are the keywords relevant to the input?
    - Are the keywords suitable for SEO?
    Answer with the final score between 0 and 3
  choice_strings: "0123"
  choice_scores: from_strings
  input_outputs:
    input: input
    input: completion""",
    **MORE_FILES,
}
