"""python -m dnngraph.cache: look after a KernelCacheStore folder from the shell, as the C++
command dnngraph-cache (tools/dnngraph_cache.cpp) does, over the Python bindings.

    list DIR      one line per stored cache: key, cuDNN version, entries, size
    inspect PATH  a file (or every file of a folder): topology summary, entries
    verify DIR    each file checked as from_json checks it and, when it is for the cuDNN
                  loaded here, loaded into a KernelCache; exit 1 if any fails
    prune DIR [--dry-run] [--keep-other-versions]
                  removes damaged files, temporaries of writers that died and (unless kept)
                  caches of another cuDNN than the one loaded here

Exit status: 0 fine, 1 something failed or is damaged, 2 usage. The output is the C++
command's, line for line (tests/cmake/cache_cli_test.cmake checks both).
"""

import argparse
import json
import os
import pathlib
import re
import sys
from typing import Any, List, Optional, Sequence, Tuple

from . import _C
from ._C import KernelCache, KernelCacheStore, cudnn_runtime_version, cudnn_version_string

PROG = "python -m dnngraph.cache"
_LOCK_PATIENCE_SECONDS = 10.0


def _complain(message: str) -> None:
    print(f"dnngraph.cache: {message}", file=sys.stderr)


def _read(path: pathlib.Path) -> Tuple[Optional[str], str]:
    """The whole file as text, or None and why not (as the store's own reads say it)."""
    try:
        with open(path, "rb") as file:
            data = file.read(KernelCache.max_json_bytes + 1)
    except OSError as e:
        return None, f"kernel cache store: open {path}: {e.strerror}"
    if len(data) > KernelCache.max_json_bytes:
        return None, f"kernel cache store: {path} is larger than {KernelCache.max_json_bytes} bytes"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as e:
        return None, f"does not parse: {e}"


def _parse(path: pathlib.Path) -> Tuple[Optional[Any], str]:
    """The document as JSON, or None and why it is not."""
    text, problem = _read(path)
    if text is None:
        return None, problem
    try:
        return json.loads(text), ""
    except ValueError as e:
        return None, f"does not parse: {e}"


def _member(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_count(document: Any) -> int:
    entries = _member(document, "kernel_cache")
    return len(entries) if isinstance(entries, list) else -1


def _short_operation(name: str) -> str:
    """"MATMUL" for "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR"."""
    if name.startswith("CUDNN_BACKEND_OPERATION_"):
        name = name[len("CUDNN_BACKEND_OPERATION_") :]
    if name.endswith("_DESCRIPTOR"):
        name = name[: -len("_DESCRIPTOR")]
    return name


def _topology_summary(document: Any) -> str:
    graph = _member(document, "operationGraph")
    if graph is None:
        return "no operationGraph"
    text = ""
    nodes = _member(graph, "nodes")
    for node in nodes if isinstance(nodes, list) else []:
        operation = _member(node, "operation")
        if text:
            text += " -> "
        text += _short_operation(operation) if isinstance(operation, str) else "?"
        mode = _member(node, "pointwiseMode")
        if isinstance(mode, str):
            text += f"({mode})"
    tensors = _member(graph, "tensors")
    if isinstance(tensors, list):
        text += f"; {len(tensors)} tensors"
    dynamic = _member(graph, "isDynamicShapeEnabled")
    if isinstance(dynamic, bool):
        text += ", dynamic shapes" if dynamic else ", static shapes"
    return text


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _store_files(folder: pathlib.Path) -> Tuple[List[pathlib.Path], int]:
    """The store's files by name, and 1 when they could not be listed."""
    try:
        return [f.path for f in KernelCacheStore(folder).list()], 0
    except _C.Error as e:
        _complain(e.message)
        return [], 1


def list_store(folder: pathlib.Path) -> int:
    try:
        files = KernelCacheStore(folder).list()
    except _C.Error as e:
        _complain(e.message)
        return 1
    print(f"{'topology':<40} {'cuDNN':<9} {'arch':<8} {'entries':>7} {'bytes':>10}  file")
    for f in files:
        document, _ = _parse(f.path)
        entries = str(_entry_count(document)) if document is not None else "damaged"
        version = cudnn_version_string(f.key.cudnn_version)
        print(
            f"{f.key.topology:<40} {version:<9} {f.key.gpu_architecture:<8} {entries:>7} "
            f"{f.bytes:>10}  {f.path.name}"
        )
    print(f"{len(files)} cache{'' if len(files) == 1 else 's'} in {folder}")
    return 0


def _inspect_file(path: pathlib.Path) -> int:
    document, problem = _parse(path)
    print(path)
    if document is None:
        print(f"  damaged: {problem}")
        return 1
    print(f"  bytes: {path.stat().st_size}")
    written = _member(document, "cudnnVersion")
    if _is_int(written):
        print(f"  written by cuDNN {cudnn_version_string(written)}")
    schema = _member(document, "schemaVersion")
    if _is_int(schema):
        print(f"  schema version {schema}")
    print(f"  topology: {_topology_summary(document)}")
    print(f"  entries: {_entry_count(document)}")
    entries = _member(document, "kernel_cache")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        key = _member(entry, "key")
        engine = _member(key, "engineId")
        knobs = _member(key, "knobChoices")
        value = _member(entry, "value")
        print(
            f"    [{i}] engine {'?' if engine is None else _compact(engine)}, knobs "
            f"{'?' if knobs is None else _compact(knobs)}, "
            f"{len(value) if isinstance(value, list) else 0} compiled kernel(s)"
        )
    return 0


def inspect(path: pathlib.Path) -> int:
    if not path.is_dir():
        return _inspect_file(path)
    files, status = _store_files(path)
    for file in files:
        status = 1 if _inspect_file(file) != 0 else status
    return status


def _verdict(file: pathlib.Path, loaded: int) -> str:
    key = KernelCacheStore.key_of(file.name)
    text, problem = _read(file)
    if text is None:
        return f"FAILED: {problem}"
    try:
        entries = _C._check_cache_document(text)
    except _C.Error as e:
        return f"DAMAGED: {e.message}"
    if key is not None and key.cudnn_version != loaded:
        return (
            f"ok: checked ({entries} entries); not loaded: it is for cuDNN "
            f"{cudnn_version_string(key.cudnn_version)}, {cudnn_version_string(loaded)} is "
            "loaded here"
        )
    try:
        KernelCache().from_json(text)
    except _C.Error as e:
        return f"DAMAGED: {e.message}"
    return f"ok: checked and loaded ({entries} entries)"


def verify(folder: pathlib.Path) -> int:
    files, status = _store_files(folder)
    loaded = cudnn_runtime_version()
    good = bad = 0
    for file in files:
        verdict = _verdict(file, loaded)
        if verdict.startswith("ok"):
            good += 1
        else:
            bad += 1
        print(f"{file.name}: {verdict}")
    print(f"{good} ok, {bad} damaged or unreadable")
    return 1 if bad > 0 else status


def _dead_temporary(name: str) -> bool:
    """A temporary "<file>.tmp.<pid>.<n>" whose writer is gone."""
    at = name.find(".tmp.")
    if at < 0:
        return False
    rest = name[at + len(".tmp.") :]
    if "." not in rest:
        return False
    digits = re.match(r"[0-9]*", rest.split(".", 1)[0])
    pid = int(digits.group(0)) if digits and digits.group(0) else 0
    if pid <= 0 or pid > 2**31 - 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: alive, another user's
        return False
    return False


def prune(folder: pathlib.Path, dry_run: bool, keep_other_versions: bool) -> int:
    if not folder.is_dir():
        _complain(f"{folder} is not a folder")
        return 1
    try:
        lock = _C._FolderLock(folder, _LOCK_PATIENCE_SECONDS)
    except _C.Error as e:
        _complain(e.message)
        return 1
    with lock:
        loaded = cudnn_runtime_version()
        removed = 0
        status = 0
        for entry in os.scandir(folder):
            name = entry.name
            key = KernelCacheStore.key_of(name)
            if name.endswith(KernelCacheStore.damaged_suffix):
                why = "damaged"
            elif _dead_temporary(name):
                why = "temporary of a writer that died"
            elif key is not None and not keep_other_versions and key.cudnn_version != loaded:
                why = (
                    f"for cuDNN {cudnn_version_string(key.cudnn_version)}, "
                    f"{cudnn_version_string(loaded)} is loaded"
                )
            else:
                continue
            if not dry_run:
                try:
                    os.remove(entry.path)
                except OSError as e:
                    _complain(f"remove {name}: {e.strerror}")
                    status = 1
                    continue
            removed += 1
            print(f"{'would remove' if dry_run else 'removed'} {name} ({why})")
        print(f"{removed} {'would be removed' if dry_run else 'removed'}")
        return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Look after a KernelCacheStore folder (docs/kernel-cache.md). Exit status: "
        "0 fine, 1 something failed or is damaged, 2 usage.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "list", help="one line per stored cache: key, cuDNN version, entries, size"
    ).add_argument("path", metavar="DIR", type=pathlib.Path)
    commands.add_parser(
        "inspect", help="a file (or every file of a folder): topology summary, entries"
    ).add_argument("path", metavar="PATH", type=pathlib.Path)
    commands.add_parser(
        "verify",
        help="each file checked as from_json checks it and, when it is for the cuDNN loaded "
        "here, loaded into a KernelCache; exit 1 if any fails",
    ).add_argument("path", metavar="DIR", type=pathlib.Path)
    pruning = commands.add_parser(
        "prune",
        help="removes damaged files, temporaries of writers that died and (unless kept) caches "
        "of another cuDNN than the one loaded here",
    )
    pruning.add_argument("path", metavar="DIR", type=pathlib.Path)
    pruning.add_argument("--dry-run", action="store_true", help="say what would be removed")
    pruning.add_argument(
        "--keep-other-versions", action="store_true", help="keep caches of another cuDNN"
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return list_store(args.path)
        if args.command == "inspect":
            return inspect(args.path)
        if args.command == "verify":
            return verify(args.path)
        return prune(args.path, args.dry_run, args.keep_other_versions)
    except OSError as e:  # a file system call that fails: say so, never a traceback
        _complain(str(e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
