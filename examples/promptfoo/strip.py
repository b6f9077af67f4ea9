def get_transform(output, context):
    """promptfoo's default function name for a Python transform: the answer without its label."""
    return output.removeprefix("Answer: ")
