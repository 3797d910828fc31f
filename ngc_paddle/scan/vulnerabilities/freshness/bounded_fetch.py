"""One bounded HTTP GET for the freshness check: at most a given size, within a deadline, every failure one
`Unavailable` line (no library bounds both size and time of a urllib download)."""

import http.client
import time
import urllib.error
import urllib.request

TIMEOUT_S = 30  # per connection and read
DEADLINE_S = 180  # one download in all: bookworm's main Packages.xz is about 9 MB
USER_AGENT = "ngc-paddle-scan"


class Unavailable(Exception):
    """A source could not be asked or gave something unusable; str() is the one-line reason."""


class NotFound(Unavailable):
    """The source answered 404."""


def fetch(url: str, limit: int, accept: str | None = None) -> tuple[bytes, str]:
    """The body (at most `limit` bytes, within DEADLINE_S) and content type of a URL, or Unavailable."""
    headers = {"User-Agent": USER_AGENT, **({"Accept": accept} if accept else {})}
    deadline = time.monotonic() + DEADLINE_S
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as resp:
            chunks, size = [], 0
            while chunk := resp.read(1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise Unavailable(f"{url}: larger than {limit} bytes")
                if time.monotonic() > deadline:
                    raise Unavailable(f"{url}: download took longer than {DEADLINE_S} s")
                chunks.append(chunk)
            return b"".join(chunks), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        raise (NotFound if exc.code == 404 else Unavailable)(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise Unavailable(f"{url}: {exc.reason}") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise Unavailable(f"{url}: {type(exc).__name__}: {exc}") from None


