"""The agent's final message names the product it saved."""


def check(ctx):
    text = (ctx.output or "").lower()
    if "city commuter" in text or "p2" in text:
        return True, "the answer names City Commuter"
    return False, "the answer does not name the product saved"
