"""What a drawn Harbor task draws at environment start (docs/harbor.md#drawn-tasks): one
module per tool family, each function `fn(rng, public) -> truth`.

A function writes the agent's inputs into `public` (the folder `main` sees read-only at /task,
file names that do not give the answer away) using `rng` alone for its randomness, and
returns the answer's truth: {field name: JSON value} for every field its key marks `drawn`.
The draw service (biotool_sandbox.harbor_draw) runs it in the sandbox image, outside `main`,
and keeps the truth where only the verifier reads it.
"""
