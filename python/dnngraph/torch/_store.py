"""dnngraph.torch's kernel caches kept on disk: a dnngraph.KernelCacheStore that the runtime's
kernel caches (one per dynamic-shape topology and GPU architecture) are loaded from when a
topology is first used, and written back to by save_caches(), so that a restarted training job
or server starts with the kernels compiled before (docs/torch.md, docs/kernel-cache.md)."""

import hashlib
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Hashable, Optional, Tuple, Union

import dnngraph

# (op, topology, GPU architecture): the runtime's key of a kernel cache.
CacheKey = Tuple[str, Hashable, Tuple[int, int]]

_lock = threading.Lock()  # guards _store and _loaded
_store: "list[Optional[dnngraph.KernelCacheStore]]" = [None]
_loaded = [0]  # kernel caches loaded from a stored file (cache_info's kernel_caches_loaded)


def default_cache_folder() -> Path:
    """dnngraph.KernelCacheStore.default_folder(): $DNNGRAPH_CACHE_DIR, else
    $XDG_CACHE_HOME/dnngraph, else ~/.cache/dnngraph."""
    return Path(dnngraph.KernelCacheStore.default_folder())


def set_cache_store(folder: Union[str, "os.PathLike[str]", None] = "") -> Optional[Path]:
    """Keeps dnngraph.torch's kernel caches in `folder` (a dnngraph.KernelCacheStore): a topology
    first used from now on loads its stored cache (not built: the first build binds it), and
    save_caches() writes back those that changed. "" (the default) is default_cache_folder();
    None detaches the store (caches already loaded stay). Kernel caches made before this call are
    not the store's and are not saved. Returns the folder."""
    store = None
    if folder is not None:
        store = dnngraph.KernelCacheStore(Path(folder) if folder != "" else default_cache_folder())
    with _lock:
        _store[0] = store
    return None if store is None else Path(store.folder)


def topology_name(key: CacheKey) -> str:
    """The store's name for a kernel cache: the operator's name, then a hash of the topology
    (data types, flags, variant), which the store's file names can hold (letters, digits, '.',
    '_' and '-'): the same in every process for the same topology."""
    op, topology, _ = key
    digest = hashlib.sha256(repr(topology).encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "._" else "_" for c in op)
    return f"{safe}_{digest}"


def architecture(key: CacheKey) -> str:
    major, minor = key[2]
    return f"sm_{major}{minor}"


def open_cache(key: CacheKey) -> Any:
    """The kernel cache for `key`: loaded from the store when one is set (a new one when it holds
    none; a damaged file is set aside by the store, with a warning), else a new one."""
    with _lock:
        store = _store[0]
    if store is None:
        return dnngraph.KernelCache()
    stored = store.load_or_create(topology_name(key), architecture(key))
    if stored.loaded:
        with _lock:
            _loaded[0] += 1
    if stored.warning:
        warnings.warn(f"dnngraph.torch: the stored kernel cache of {key[0]} could not serve: "
                      f"{stored.warning}", RuntimeWarning, stacklevel=3)
    return stored.cache


def loaded() -> int:
    """How many kernel caches came from a stored file since the start (or forget())."""
    with _lock:
        return _loaded[0]


def forget() -> None:
    with _lock:
        _loaded[0] = 0


def save(caches: "dict[CacheKey, Any]") -> "dict[str, Any]":
    """save_caches() over the runtime's caches: each one the store handed out whose revision
    moved is written; see _runtime.save_caches."""
    with _lock:
        store = _store[0]
    report: "dict[str, Any]" = {"folder": None if store is None else str(store.folder),
                                "saved": 0, "unchanged": 0, "not_from_store": 0, "errors": []}
    if store is None:
        return report
    for key, cache in caches.items():
        try:
            wrote = store.save_if_changed(cache)
        except dnngraph.Error as e:
            if e.code is dnngraph.ErrorCode.InvalidState:  # not handed out by this store
                report["not_from_store"] += 1
            else:
                report["errors"].append(f"{key[0]} {topology_name(key)}: {e}")
            continue
        report["saved" if wrote else "unchanged"] += 1
    return report
