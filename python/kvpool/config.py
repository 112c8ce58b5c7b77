"""Configuration of kvpool's SGLang backend, read the way SGLang's Mooncake backend reads its own.

Sources, first match wins (SGLang's precedence):
  1. ``extra_config`` (``--hicache-storage-backend-extra-config``) when it names
     ``master_server_address`` or ``client_server_address``;
  2. the JSON file named by ``SGLANG_HICACHE_MOONCAKE_CONFIG_PATH``;
  3. the ``MOONCAKE_*`` environment variables (one of ``MOONCAKE_MASTER`` /
     ``MOONCAKE_CLIENT`` required).
A field missing from the chosen source takes its default (not the environment), as in SGLang.

kvpool's own keys (``standalone_allocator_mismatch``, ``local_buffer_size``) follow the same
sources; in addition, when ``extra_config`` carries them they apply whatever the source of the
rest (so the dynamic backend's extra config can set them next to ``module_path``).

Every value is validated here; a bad one raises :class:`KVPoolConfigError` naming the field,
the source and the fix.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import os
from typing import Any, Dict, Mapping, Optional, Union

from kvpool._kvpool import client_options, parse_size

logger = logging.getLogger("kvpool.config")

CONFIG_PATH_ENV = "SGLANG_HICACHE_MOONCAKE_CONFIG_PATH"
LOCAL_BUFFER_ENV = "SGLANG_MOONCAKE_LOCAL_BUFFER_SIZE"
MISMATCH_CHOICES = ("error", "copy", "embedded")
DEFAULT_CLIENT_SERVER_ADDRESS = "127.0.0.1:50052"


class KVPoolConfigError(ValueError):
    """A configuration value is missing or malformed; the message names it and the fix."""


# Fields shared with the client option table (client/client_config.h, listed by
# _kvpool.client_options()): their environment variable is the table's first one, whose name
# is SGLang's. The other fields are SGLang's or kvpool-layer and keep their names here.
_TABLE_ENV: Dict[str, str] = {row["name"]: row["env"][0] for row in client_options() if row["env"]}


def _table_env(field: str) -> str:
    return _TABLE_ENV[field]


# field -> environment variable (SGLang's names; the last ones are kvpool's).
ENV_VARS: Dict[str, str] = {
    "local_hostname": _table_env("local_hostname"),
    "metadata_server": "MOONCAKE_TE_META_DATA_SERVER",
    "global_segment_size": _table_env("global_segment_size"),
    "protocol": _table_env("protocol"),
    "device_name": "MOONCAKE_DEVICE",
    "master_server_address": _table_env("master_server_address"),
    "master_metrics_port": "MOONCAKE_MASTER_METRICS_PORT",
    "check_server": "MOONCAKE_CHECK_SERVER",
    "standalone_storage": "MOONCAKE_STANDALONE_STORAGE",
    "client_server_address": "MOONCAKE_CLIENT",
    "enable_ssd_offload": "MOONCAKE_ENABLE_SSD_OFFLOAD",
    "ssd_offload_path": "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH",
    "tenant_id": _table_env("tenant_id"),
    "standalone_allocator_mismatch": "KVPOOL_STANDALONE_ALLOCATOR_MISMATCH",
    "local_buffer_size": LOCAL_BUFFER_ENV,
    "verify_checksum": _table_env("verify_checksum"),
    "tenant_key_file": _table_env("tenant_key_file"),
    "ssd_offload_size": "KVPOOL_SSD_OFFLOAD_SIZE",
}
KVPOOL_ONLY_FIELDS = ("standalone_allocator_mismatch", "local_buffer_size", "verify_checksum",
                      "tenant_key_file", "ssd_offload_size")

# Keys SGLang itself puts in extra_config: not ours, never warned about.
_SGLANG_EXTRA_KEYS = {
    "backend_name", "module_path", "class_name", "interface_v1", "extra_backend_tag",
    "enable_group_semantics", "tp_lcm_size", "allocator", "prefetch_threshold",
}


@dataclasses.dataclass
class KVPoolStoreConfig:
    """The backend's settings; field names and defaults are SGLang's MooncakeStoreConfig's."""

    local_hostname: str = "localhost"
    metadata_server: str = "P2PHANDSHAKE"
    global_segment_size: int = 4 * 1024**3  # for the whole instance; divided per rank
    protocol: str = "tcp"
    device_name: Union[str, Dict[int, str]] = ""
    master_server_address: Optional[str] = None
    master_metrics_port: int = 9003
    check_server: bool = False
    standalone_storage: bool = False
    client_server_address: Optional[str] = None
    enable_ssd_offload: bool = False
    # With enable_ssd_offload: the directory of the disk tier below each rank's segment (each
    # rank uses its own subdirectory, rank-<tp_rank>, and re-adopts it after a restart).
    ssd_offload_path: Optional[str] = None
    # The key namespace ("default": the default tenant; docs/security.md, "Tenants").
    tenant_id: str = "default"
    # kvpool: what standalone mode does when the host pool is not in kvpool's shared memory.
    standalone_allocator_mismatch: str = "error"
    # kvpool: the staging buffer shared with the node (standalone copying path).
    local_buffer_size: int = 16 * 1024**2
    # kvpool: gets check each page's XXH3 checksum (CHECKSUM_MISMATCH instead of bad bytes).
    verify_checksum: bool = False
    # kvpool: file holding tenant_id's tenant key (`kvpool tenant-key`); None: the pool secret
    # ($KVPOOL_AUTH_SECRET) or $KVPOOL_TENANT_KEY, if any.
    tenant_key_file: Optional[str] = None
    # kvpool: bytes of each rank's disk tier with enable_ssd_offload (None: 4 x its segment).
    ssd_offload_size: Optional[int] = None
    # Where the values came from: "extra_config", "file:<path>" or "env" (for messages).
    source: str = "defaults"

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, extra_config: Optional[Mapping[str, Any]] = None,
             environ: Optional[Mapping[str, str]] = None) -> "KVPoolStoreConfig":
        """Reads the configuration with SGLang's precedence (see the module docstring)."""
        env = os.environ if environ is None else environ
        extra = dict(extra_config or {})
        if extra.get("master_server_address") is not None or \
                extra.get("client_server_address") is not None:
            config = cls.from_mapping(extra, "extra_config")
        elif env.get(CONFIG_PATH_ENV):
            config = cls.from_file(env[CONFIG_PATH_ENV])
        else:
            config = cls.from_env(env)
            # kvpool-only keys may sit in extra_config beside SGLang's dynamic-backend keys.
            for name in KVPOOL_ONLY_FIELDS:
                if name in extra:
                    setattr(config, name, extra[name])
        config.validate()
        return config

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str) -> "KVPoolStoreConfig":
        """A dict (extra_config or a JSON file's object); missing fields take defaults."""
        if "master_server_address" not in values and "client_server_address" not in values:
            raise KVPoolConfigError(
                f"Either master_server_address or client_server_address is required in "
                f"{source} (master_server_address: the kvpool master, host:port, for embedded "
                f"mode; client_server_address: the local kvpool node for standalone mode)")
        _warn_unknown_keys(values, source)
        fields = {f.name for f in dataclasses.fields(cls)} - {"source"}
        config = cls(**{k: v for k, v in values.items() if k in fields})
        config.source = source
        return config

    @classmethod
    def from_file(cls, path: str) -> "KVPoolStoreConfig":
        """The JSON file SGLANG_HICACHE_MOONCAKE_CONFIG_PATH names."""
        try:
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
        except FileNotFoundError as e:
            raise KVPoolConfigError(
                f"Failed to load config from {path}: the file does not exist "
                f"(set {CONFIG_PATH_ENV} to an existing JSON file, or unset it)") from e
        except json.JSONDecodeError as e:
            raise KVPoolConfigError(
                f"Failed to load config from {path}: not valid JSON: {e}") from e
        except OSError as e:
            raise KVPoolConfigError(f"Failed to load config from {path}: {e}") from e
        if not isinstance(values, dict):
            raise KVPoolConfigError(
                f"Failed to load config from {path}: expected a JSON object with the fields of "
                f"MooncakeStoreConfig, got {type(values).__name__}")
        return cls.from_mapping(values, f"file {path}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "KVPoolStoreConfig":
        """The MOONCAKE_* environment variables (LOCAL_HOSTNAME as a legacy fallback)."""
        if not env.get("MOONCAKE_MASTER") and not env.get("MOONCAKE_CLIENT"):
            raise KVPoolConfigError(
                "Either the environment variable 'MOONCAKE_MASTER' or 'MOONCAKE_CLIENT' is not "
                "set: set MOONCAKE_MASTER=host:port (the kvpool master) for embedded mode or "
                "MOONCAKE_CLIENT=host:port (the local kvpool node) with "
                f"MOONCAKE_STANDALONE_STORAGE=true, or put them in extra_config or in the JSON "
                f"file named by {CONFIG_PATH_ENV}")
        config = cls(source="env")
        for name, var in ENV_VARS.items():
            if var in env:
                setattr(config, name, env[var])
        if "MOONCAKE_LOCAL_HOSTNAME" not in env and "LOCAL_HOSTNAME" in env:
            config.local_hostname = env["LOCAL_HOSTNAME"]
        return config

    # ---- validation ----------------------------------------------------------------------
    def validate(self) -> None:
        """Normalises types (sizes, booleans, ports) and checks every field."""
        self.global_segment_size = _size(self.global_segment_size, "global_segment_size",
                                         self.source)
        self.local_buffer_size = _size(self.local_buffer_size, "local_buffer_size", self.source)
        if self.ssd_offload_size is not None:
            self.ssd_offload_size = _size(self.ssd_offload_size, "ssd_offload_size", self.source)
        for name in ("check_server", "standalone_storage", "enable_ssd_offload",
                     "verify_checksum"):
            setattr(self, name, _bool(getattr(self, name), name, self.source))
        self.master_metrics_port = _port(self.master_metrics_port, "master_metrics_port",
                                         self.source)
        for name in ("local_hostname", "metadata_server", "protocol", "tenant_id"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise KVPoolConfigError(
                    f"{name}={value!r} (from {self.source}) must be a string")
        self.tenant_id = self.tenant_id.strip() or "default"
        if self.protocol not in ("tcp", "rdma"):
            raise KVPoolConfigError(
                f"protocol={self.protocol!r} (from {self.source}) is unknown; use 'tcp'")
        if "\0" in self.tenant_id or len(self.tenant_id.encode()) > 128:
            raise KVPoolConfigError(
                f"tenant_id={self.tenant_id!r} (from {self.source}) must be at most 128 bytes "
                f"without NUL characters")
        for name in ("master_server_address", "client_server_address", "ssd_offload_path",
                     "tenant_key_file"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise KVPoolConfigError(f"{name}={value!r} (from {self.source}) must be a string")
            if isinstance(value, str) and not value.strip():
                setattr(self, name, None)
        mismatch = self.standalone_allocator_mismatch
        if not isinstance(mismatch, str) or mismatch.strip().lower() not in MISMATCH_CHOICES:
            raise KVPoolConfigError(
                f"standalone_allocator_mismatch={mismatch!r} (from {self.source}) must be one of "
                f"{', '.join(MISMATCH_CHOICES)}")
        self.standalone_allocator_mismatch = mismatch.strip().lower()
        # Parse now so a bad device_name fails at start-up, not at the first connection.
        if not isinstance(self.device_name, (str, dict)):
            raise KVPoolConfigError(
                f"device_name={self.device_name!r} (from {self.source}) must be a NIC list, a "
                f"JSON mapping from GPU id to NICs, or the path of a JSON file with one")
        parse_device_name(self.device_name)
        if self.standalone_storage and self.client_server_address is None:
            logger.info("standalone_storage without client_server_address: using the node at %s",
                        DEFAULT_CLIENT_SERVER_ADDRESS)
            self.client_server_address = DEFAULT_CLIENT_SERVER_ADDRESS
        if not self.standalone_storage and self.master_server_address is None:
            raise KVPoolConfigError(
                f"master_server_address is required (from {self.source}) unless "
                f"standalone_storage is true: give the kvpool master as host:port")

    def per_rank_segment_size(self, tp_size: int = 1, pp_size: int = 1) -> int:
        """global_segment_size is for the whole instance: each rank contributes its share."""
        return self.global_segment_size // max(1, tp_size * pp_size)

    def device_for_rank(self, tp_rank: int) -> str:
        """The NIC list for one TP rank ("" when the mapping has no entry for it)."""
        return resolve_device_name(self.device_name, tp_rank)


# ---- device_name --------------------------------------------------------------------------

def parse_device_name(value: Union[str, Mapping, None]) -> Union[str, Dict[int, str], None]:
    """Parses device_name the way SGLang's helpers do, with an error per bad form.

    Accepted: ``""`` / None (no NICs), a plain NIC list (``"mlx5_0,mlx5_1"``), a JSON object
    mapping GPU id / TP rank to NICs (string or int keys; values a string or a list of
    strings), a dict of the same (from a JSON extra_config), or the path of a JSON file holding
    such an object (a value ending in ``.json`` or containing ``/``).
    Returns the NIC list or ``{rank: "nic,nic"}``.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        return _normalise_mapping(value, repr(dict(value)))
    if not isinstance(value, str):
        raise KVPoolConfigError(
            f"Invalid device_name {value!r}: expected a NIC list, a JSON mapping or a file path")
    text = value.strip()
    if not text:
        return None
    is_path = text.endswith(".json") or "/" in text
    if not is_path and not text.startswith("{"):
        if text.startswith("["):
            raise KVPoolConfigError(
                f"Invalid format: expected a mapping from GPU id to IB device, got the JSON "
                f"list {text}; write the NICs as \"mlx5_0,mlx5_1\" or as {{\"0\": \"mlx5_0\"}}")
        return text
    if is_path:
        if not os.path.exists(text):
            raise KVPoolConfigError(
                f"File {text} does not exist (device_name names a JSON file of GPU id -> NICs)")
        try:
            with open(text, encoding="utf-8") as f:
                mapping = json.load(f)
        except json.JSONDecodeError as e:
            raise KVPoolConfigError(
                f"Failed to parse JSON content from file {text}: {e}") from e
        except (OSError, UnicodeDecodeError) as e:
            raise KVPoolConfigError(f"Failed to read JSON file {text}: {e}") from e
        return _normalise_mapping(mapping, f"file {text}")
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as e:
        raise KVPoolConfigError(
            f"Invalid JSON mapping: {text} ({e}); expected e.g. {{\"0\": \"mlx5_0\", "
            f"\"1\": \"mlx5_1\"}}") from e
    return _normalise_mapping(mapping, text)


def resolve_device_name(value: Union[str, Mapping, None], tp_rank: int) -> str:
    parsed = parse_device_name(value)
    if parsed is None:
        return ""
    if isinstance(parsed, str):
        return parsed
    if tp_rank not in parsed:
        logger.warning("device_name maps GPUs %s but not TP rank %d; using no NIC list",
                       sorted(parsed), tp_rank)
        return ""
    return parsed[tp_rank]


def _normalise_mapping(mapping: Any, shown: str) -> Dict[int, str]:
    if not isinstance(mapping, dict):
        raise KVPoolConfigError(
            f"Invalid format: expected a mapping from GPU id to IB device, got "
            f"{type(mapping).__name__} in {shown}")
    out: Dict[int, str] = {}
    for key, nics in mapping.items():
        key_text = str(key).strip()
        if isinstance(key, bool) or not key_text.isdigit():
            raise KVPoolConfigError(
                f"Invalid format: GPU id {key!r} in {shown} is not an integer (keys must be "
                f"integers or strings of digits)")
        if isinstance(nics, str):
            value = nics.strip()
        elif isinstance(nics, list) and nics and all(isinstance(n, str) for n in nics):
            value = ",".join(n.strip() for n in nics)
        else:
            raise KVPoolConfigError(
                f"Invalid format: the IB device of GPU {key_text} in {shown} is {nics!r}; "
                f"values must be strings (\"mlx5_0,mlx5_1\") or lists of strings")
        out[int(key_text)] = value
    if not out:
        raise KVPoolConfigError(f"No valid GPU mappings found in JSON {shown}")
    return out


# ---- scalar parsing -----------------------------------------------------------------------

def _size(value: Any, name: str, source: str) -> int:
    if isinstance(value, bool):
        raise KVPoolConfigError(f"{name}={value!r} (from {source}) must be a size, not a bool")
    if isinstance(value, int):
        if value < 0:
            raise KVPoolConfigError(f"{name}={value} (from {source}) is negative")
        return value
    if isinstance(value, str):
        try:
            return parse_size(value, name)
        except ValueError as e:
            raise KVPoolConfigError(f"{e} (from {source}); write e.g. \"4gb\" or 4294967296") \
                from None
    raise KVPoolConfigError(
        f"{name}={value!r} (from {source}) must be an int or a string like \"4gb\"")


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _bool(value: Any, name: str, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise KVPoolConfigError(f"{name}={value!r} (from {source}) must be true or false")


def _port(value: Any, name: str, source: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = -1
    if isinstance(value, bool) or not 0 < port < 65536:
        raise KVPoolConfigError(f"{name}={value!r} (from {source}) must be a port (1-65535)")
    return port


def _warn_unknown_keys(values: Mapping[str, Any], source: str) -> None:
    known = set(ENV_VARS) | _SGLANG_EXTRA_KEYS
    for key in values:
        if key in known:
            continue
        close = difflib.get_close_matches(key, list(ENV_VARS), n=1, cutoff=0.8)
        if close:
            logger.warning("%s: unknown key %r ignored; did you mean %r?", source, key, close[0])
