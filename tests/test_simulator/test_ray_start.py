"""Ray's start-up notice stays out of socium's output; its real warnings and errors do not."""

import logging

import ray

from socium.simulator import ray_start


def test_start_ray_drops_only_the_auth_enabled_notice_and_keeps_warnings(monkeypatch, caplog):
    got = {}
    monkeypatch.setattr(ray, "init", lambda **kw: got.update(kw))
    ray_start.start_ray(num_cpus=1)
    assert got == {"num_cpus": 1, "logging_level": logging.WARNING}  # Ray's INFO lines ("Started a local ...") off
    ray_start.start_ray(logging_level=logging.INFO)  # a user's ray_init wins
    assert got["logging_level"] == logging.INFO
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    with caplog.at_level(logging.WARNING):
        log.warning("Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out.")
        log.warning("Token authentication is disabled for this Ray cluster. Anyone with network access ...")
        log.error("could not read the token file")
    shown = [r.getMessage() for r in caplog.records]
    assert len(shown) == 2 and "disabled" in shown[0] and "could not read" in shown[1]
    assert log.filters.count(ray_start._FILTER) == 1  # started twice, filtered once
