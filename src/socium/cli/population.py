"""``socium population generate``: an LLM-written population of agents."""

from __future__ import annotations

from pathlib import Path

import typer

from socium.cli.app import _fail, _Group, app, console
from socium.errors import SociumError

population_app = typer.Typer(no_args_is_help=True, cls=_Group, help="Generate agent populations.")
app.add_typer(population_app, name="population")


@population_app.command("generate")
def population_generate(
    description: str = typer.Argument(..., help="The community, in words (e.g. 'cyclists and drivers in Leeds')."),
    n: int = typer.Option(100, "--n", help="Number of people."),
    out: Path = typer.Option(..., "--out", help="CSV to write (loads with population.source: oasis_csv)."),
    seed: int = typer.Option(0, "--seed", help="Root seed for the sampled attributes and the model's sampling."),
    issue: str | None = typer.Option(None, "--issue", help="What stance is about (default: the description)."),
    marginals: Path | None = typer.Option(
        None, "--marginals", help="YAML of demographic marginals (docs/population.md)."
    ),
    backend: str = typer.Option(
        "embedded", "--backend", help="LLM backend writing the prose: embedded, openai, fake, random."
    ),
    model: str | None = typer.Option(None, "--model", help="Model name (openai: the served model)."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: the server's .../v1 URL."),
) -> None:
    """Sample demographics from marginals, have an LLM write bios and personas, write an OASIS-style CSV."""
    from socium.agents.population_gen import generate_population, load_marginals  # lazy: CLI start-up
    from socium.config.llm import LLMConfig  # lazy: CLI start-up

    try:
        llm = LLMConfig.parse(
            {"backend": backend, "model": model, "base_urls": [base_url] if base_url else [], "seed": seed},
            where="--backend/--model/--base-url",
        )
        summary = generate_population(
            description, n, out, seed=seed, issue=issue, marginals=load_marginals(marginals), llm=llm
        )
    except SociumError as exc:
        _fail(exc)
        return
    console.print(
        f"wrote {summary['n']} people to {summary['out']} ({summary['calls']} model calls, "
        f"{summary['invalid']} invalid, {summary['duplicates']} duplicate bios re-asked, "
        f"{summary['fallback']} template fallbacks)",
        highlight=False,
    )
