import importlib
import platform


def test_import_socium_keeps_stdlib_platform_working():
    import socium  # noqa: F401

    for sub in ("platform", "recsys", "agents", "simulator", "experiments", "cli", "llm"):
        importlib.import_module(f"socium.{sub}")
    import platform as again

    assert again is platform
    assert again.__file__ and "socium" not in again.__file__
    assert isinstance(platform.system(), str) and platform.system()
    assert platform.python_version().count(".") == 2
