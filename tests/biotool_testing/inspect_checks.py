"""Inspect's portable conformance checks (inspect_ai.util._sandbox.self_check) for a test module,
collected as Inspect's own runner collects them: every check on one sample the module shares
(its module-scoped `provider_sample` fixture), the provider's known failures strict xfails, so
an entry and the docs that state the limitation go together if the check ever passes.

    globals().update(inspect_checks.suite(KNOWN_FAILURES))

and the module's fixture makes its sample with `one_sample(ProviderClass, environ)`.
"""

from __future__ import annotations

import contextlib

import pytest

try:  # the host extra; without it the module's own provider tests fail on their imports
    from inspect_ai.util._sandbox import self_check
except ImportError:
    self_check = None


def suite(known_failures: dict[str, str]) -> dict:
    """What the module adds to its globals: the checks, `anyio_backend` and `sandbox_env`."""

    @pytest.fixture(scope="module")
    def anyio_backend():
        return "asyncio"

    @pytest.fixture
    def sandbox_env(request, provider_sample):
        reason = known_failures.get(request.node.originalname)
        if reason:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
        return provider_sample

    def test_inspect_self_check_is_collected_with_its_known_failures():
        assert self_check is not None, "Inspect's conformance suite needs inspect-ai (the host extra)"
        assert len(self_check.__all__) >= 40 and set(known_failures) <= set(self_check.__all__)

    checks = {name: pytest.mark.anyio(getattr(self_check, name))
              for name in getattr(self_check, "__all__", [])}
    return {**checks, "anyio_backend": anyio_backend, "sandbox_env": sandbox_env,
            "test_inspect_self_check_is_collected_with_its_known_failures":
                test_inspect_self_check_is_collected_with_its_known_failures}


@contextlib.asynccontextmanager
async def one_sample(provider, environ: dict[str, str]):
    """The `default` sandbox of one sample of `provider` (a SandboxEnvironment class) with
    `environ` set, as Inspect makes it; the sample and its task are cleaned up after."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in environ.items():
            mp.setenv(key, value)
        await provider.task_init("self_check", None)
        envs = await provider.sample_init("self_check", None, {})
        try:
            yield envs["default"]
        finally:
            await provider.sample_cleanup("self_check", None, envs, False)
            await provider.task_cleanup("self_check", None, True)
