"""A stand-in for a model: the careful prompt gets a reasoned answer, the terse one a bare guess."""

CAPITALS = {"France": "Paris", "Spain": "Madrid", "Italy": "Rome", "Peru": "Lima"}


def reply(prompt, skill, run, params):
    country = prompt.rstrip("?").rsplit(" ", 1)[-1]
    capital = CAPITALS[country]
    if prompt.startswith("Think"):
        return f"{country}'s capital is {capital}.\nANSWER: {capital}"
    return f"ANSWER: {'Barcelona' if country == 'Spain' else capital}"
