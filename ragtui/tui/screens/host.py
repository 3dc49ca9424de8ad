"""What the screens read of the app, named in Protocols: the app (and its controller) sits above the
screens, so a screen never imports it, not even for a type, and reads the controller through a view
with no field to assign (a change to the workspace is a request to the app, ``ragtui.tui.messages``;
the one setting a screen changes, blind judging, goes through the controller's own method)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from textual.dom import DOMNode
from textual.signal import Signal

from ragtui.core.data.grades import GradeScale
from ragtui.core.judges.verify import RecordedSample
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.messages import Changed
from ragtui.tui.widgets.status_line import Status

if TYPE_CHECKING:
    from ragtui.core.analysis.runs import Baseline  # not imported at the app's start


class ControllerView(Protocol):
    """The app's state as the screens read it (``ragtui.tui.controller.Controller``)."""

    @property
    def workspace(self) -> Workspace | None:
        """The loaded workspace; None while the first load runs."""

    @property
    def settings(self) -> Settings:
        """What is loaded."""

    @property
    def retrievers(self) -> list[str]:
        """The retrievers shown, in order."""

    @property
    def retriever_status(self) -> Mapping[str, str]:
        """Each shown retriever: ``ready``, ``pending`` or ``failed``."""

    @property
    def retriever_errors(self) -> Mapping[str, str]:
        """Why a failed retriever is unavailable."""

    @property
    def baseline(self) -> Baseline | None:
        """The saved run the question list compares against, or None."""

    @property
    def embedding_progress(self) -> tuple[int, int] | None:
        """(done, total) while embedding runs."""

    @property
    def judging_blind(self) -> bool | None:
        """The judging view's blind mode as toggled this session (None: the blind setting)."""

    @property
    def estimate_sample(self) -> RecordedSample | None:
        """The random sample of questions for the estimate, once the judging view asked for it."""

    @property
    def grade_scale(self) -> GradeScale:
        """The grades a person may give, with their words."""

    @property
    def latest_change(self) -> int:
        """The serial number of the change ``u`` would undo now (0: none)."""

    def baseline_deltas(self) -> dict[str, float] | None:
        """Each question's change against the baseline, or None without one."""

    def set_judging_blind(self, blind: bool) -> None:
        """Judge blind or not for the rest of the session (the judging view's ``b``)."""


class Host(Protocol):
    """The app as the screens read it (``ragtui.tui.app.RagtuiApp``): what changed, the status line."""

    @property
    def changed(self) -> Signal[Changed]:
        """Published after every change the app made."""

    @property
    def status_changed(self) -> Signal[Status]:
        """Published when the status line's message changes."""

    @property
    def status(self) -> Status:
        """The status line's message now."""

    @property
    def progress_rate(self) -> str:
        """`` · 41 texts/s · 12 s left`` while embedding."""


def host(node: DOMNode) -> Host:
    """The app of ``node``, as the screens read it."""
    return cast(Host, node.app)
