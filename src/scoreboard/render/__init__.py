"""Browser rendering of outputs (HTML, SVG, Markdown, a folder with index.html) to PNG, stored by
content hash; Playwright is imported only when a suite renders."""

from .settings import RenderSettings
from .store import ShotStore

__all__ = ["RenderSettings", "ShotStore"]
