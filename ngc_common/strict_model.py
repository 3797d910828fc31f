"""The one strict pydantic model the project's schemas derive from: unknown keys are errors, no coercion (a bool is
not an int, a float not a str), and a validated file is frozen.

Why: the host tooling, the in-image benchmarks and the readers both share validate files a person or a tool wrote;
what counts as a wrong file is one rule, declared once here, where ngc_paddle and benchmarks may both import it.
A model that reads a format owned by others (extra="ignore" or "allow") declares its own config and says why.
"""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors; no coercion; instances are frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
