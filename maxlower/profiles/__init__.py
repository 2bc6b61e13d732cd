"""Backend profiles: what a deployment target accepts, as TOML data files in this package.

    load_profile("tensorrt")            a shipped profile, by name
    load_profile("path/to/mine.toml")   your own file (schema: docs/profiles.md, "Profile
                                        files")
    load_profiles(["rknn", "onnxruntime"])  what both accept (a ProfileSet)
    shipped_profiles()                  {name: Profile} of the files here

`Profile.rejection(node, opset)` is what `passes.legalize.LegalizePass` asks.
"""

from __future__ import annotations

import sys
from pathlib import Path

from maxlower.errors import ProfileError
from maxlower.files import PROFILE_FILE_LIMIT, read_input
from maxlower.profiles.combine import ProfileSet
from maxlower.profiles.rules import MAX_DEPTH, OpRule, Profile, parse_profile
from passes.errors import concise

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROFILE_DIR = Path(__file__).parent
ProfileLike = str | Path | Profile
# One profile, or several a model must satisfy at once (`--profile a --profile b`).
ProfilesLike = ProfileLike | ProfileSet | list[ProfileLike] | tuple[ProfileLike, ...]


def shipped_profiles() -> dict[str, Profile]:
    """Every profile file in the package, by name, sorted."""
    profiles = (load_profile(path) for path in sorted(PROFILE_DIR.glob("*.toml")))
    return {profile.name: profile for profile in profiles}


def load_profile(profile: str | Path | Profile) -> Profile:
    """A shipped profile by name, or a profile file by path (anything ending in .toml or
    containing a path separator is a path). The file must be a regular one of at most
    PROFILE_FILE_LIMIT bytes (`maxlower.files.read_input`)."""
    if isinstance(profile, Profile):
        return profile
    path = profile_path(profile)
    data = read_input(path, "profile file", PROFILE_FILE_LIMIT, error=ProfileError)
    try:
        text = data.decode("utf-8")
        document = tomllib.loads(text)
    except UnicodeDecodeError as error:
        raise ProfileError(f"{path}: not UTF-8 text ({concise(error)})") from None
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{path}: not valid TOML ({concise(error)})") from None
    except RecursionError:  # tomllib parses nested arrays and tables by recursion
        raise ProfileError(
            f"{path}: arrays or tables nested too deeply to read (a profile needs at most "
            f"{MAX_DEPTH} levels)"
        ) from None
    return parse_profile(document, path.stem, path, text)


def load_profiles(profiles: ProfilesLike) -> Profile | ProfileSet:
    """One profile (`load_profile`), or several that a model must satisfy at once (given
    as a list or tuple): a ProfileSet, which rejects what any of them rejects."""
    if isinstance(profiles, list | tuple):
        if not profiles:
            raise ProfileError("no profile given")
        loaded = [load_profile(p) for p in profiles]
        return loaded[0] if len(loaded) == 1 else ProfileSet.of(loaded)
    if isinstance(profiles, ProfileSet):
        return profiles
    return load_profile(profiles)


def profile_path(profile: str | Path) -> Path:
    """The file of a profile given by name or path (ProfileError for an unknown name)."""
    text = str(profile)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        return Path(text)
    path = PROFILE_DIR / f"{text}.toml"
    if not path.is_file():
        names = ", ".join(p.stem for p in sorted(PROFILE_DIR.glob("*.toml")))
        raise ProfileError(
            f"no profile named {text!r}; shipped profiles: {names} "
            "(or give the path of a .toml file)"
        )
    return path


__all__ = [
    "OpRule",
    "Profile",
    "ProfileSet",
    "load_profile",
    "load_profiles",
    "profile_path",
    "shipped_profiles",
]
