"""Solara served with nothing leaving this machine: no telemetry, no public-IP lookup, no CDN fetch.

Why: Solara's defaults phone home. Its server posts "server start/stop" events (with a MAC-based
fingerprint) to Mixpanel after looking up the machine's public IP, and its asset route
``/_solara/cdn/<path>`` fetches any path it does not hold from the public npm CDN (and writes it under
the venv). Turning the proxy off is no cure: the page then tells the *browser* to load from that CDN.
So telemetry is switched off, the page keeps loading its assets from ``/_solara/cdn``, and that route
is answered here from the files the ``solara-assets`` package installed, never fetched: a file not
there is a 404.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from socium.explore.guard import ASGIApp, Receive, Scope, Send

OFFLINE_ENV = {
    "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False",  # no "server start/stop" events, no public-IP lookup
    "SOLARA_SSG_ENABLED": "False",
    "SOLARA_MODE": "production",
    "SOLARA_APP": "socium.explore.app",
}
"""Solara's settings read from the environment when it is first imported; set before it is."""
CDN_PREFIX = "/_solara/cdn/"


def offline_solara() -> None:
    """Import Solara's server with telemetry off, whatever the environment said before.

    Why both the environment and the objects: Solara reads ``SOLARA_*`` variables when its settings
    modules are first imported; setting the variables first covers a fresh process, setting the
    objects after covers a Solara imported before (a test, a notebook)."""
    os.environ.update(OFFLINE_ENV)
    os.environ.setdefault("MPLBACKEND", "Agg")  # Solara would set the notebook backend, which a server has no use for
    warnings.filterwarnings("ignore", message="Cookies with samesite=none")  # plain http on localhost: lax is right
    import solara.server.starlette  # noqa: F401
    import solara.server.telemetry as telemetry
    import solara.settings
    from solara.server import settings

    settings.telemetry.mixpanel_enable = False
    settings.main.mode = "production"
    settings.ssg.enabled = False
    solara.settings.assets.proxy = True  # the page asks this server for its assets, not the CDN...
    telemetry._jupyter_start_event_send = True  # ...and the one lookup not behind mixpanel_enable never runs


def assets_dir() -> Path:
    """Where ``solara-assets`` put the CDN files (Solara's proxy cache: ``<venv>/share/solara/cdn``)."""
    from solara.server import settings

    return Path(settings.assets.proxy_cache_dir)


class LocalAssets:
    """ASGI middleware: ``/_solara/cdn/<path>`` from :func:`assets_dir` only (a file below it, else 404);
    everything else to Solara. A bare package name is stored as ``<name>/__main.js``, as Solara's cache
    stores it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.root = assets_dir().resolve()

    def lookup(self, rest: str) -> Path | None:
        """The installed file ``rest`` names, or None (missing, or outside the assets folder)."""
        if rest and "/" not in rest:
            rest += "/__main.js"
        try:
            path = (self.root / unquote(rest)).resolve()
        except (OSError, ValueError):
            return None
        return path if path.is_relative_to(self.root) and path.is_file() else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(CDN_PREFIX):
            await self.app(scope, receive, send)
            return
        from starlette.responses import FileResponse, PlainTextResponse

        found = self.lookup(path[len(CDN_PREFIX) :])
        response: Any = (
            PlainTextResponse("not installed locally (the explorer fetches nothing)\n", status_code=404)
            if found is None
            else FileResponse(found)
        )
        await response(scope, receive, send)


def local_assets(app: ASGIApp) -> ASGIApp:
    """``app`` with its CDN route answered locally (:class:`LocalAssets`)."""
    return LocalAssets(app)
