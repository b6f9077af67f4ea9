"""A custom grader: does the answer name the country it was asked about?"""


def names_country(output, context):
    country = context["vars"]["country"]
    hit = country.lower() in output.lower()
    return {"pass": hit, "score": 1.0 if hit else 0.0, "reason": f"{'names' if hit else 'does not name'} {country}"}
