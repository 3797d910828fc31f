"""File capabilities: the `security.capability` extended attribute of a file, as capability names.

Why: `setcap cap_setuid+ep` on a copy of python3 is a root shell for any user, and a setuid walk never sees
it (the mode bits are plain 0755). Layer tars carry the attribute as a PAX header
(SCHILY.xattr.security.capability, see saved_image.CAPABILITY_HEADER); its value is the kernel's
`struct vfs_cap_data` (linux/capability.h): a little-endian magic word (revision, effective flag) and the
permitted and inheritable sets, 32 bits at a time. Decoded here by hand: no library reads that struct, and
it is 20 bytes.
"""

import struct

# linux/capability.h, in bit order (CAP_CHOWN is bit 0).
NAMES = ("chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
         "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
         "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
         "sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
         "mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
         "checkpoint_restore")
REVISION_MASK, EFFECTIVE = 0xFF000000, 0x000001
WORDS = {0x01000000: 1, 0x02000000: 2, 0x03000000: 2}  # VFS_CAP_REVISION_1/2/3: 32-bit words per set


def decode(raw: bytes) -> tuple[list[str], bool]:
    """(capability names in the permitted or inheritable set, the effective flag); a value the kernel would not
    accept reads as ["unreadable"] so that it is still reported, never skipped."""
    if len(raw) < 4:
        return ["unreadable"], False
    (magic,) = struct.unpack_from("<I", raw)
    words = WORDS.get(magic & REVISION_MASK)
    if words is None or len(raw) < 4 + 8 * words:
        return ["unreadable"], bool(magic & EFFECTIVE)
    bits = 0
    for i in range(words):
        permitted, inheritable = struct.unpack_from("<II", raw, 4 + 8 * i)
        bits |= (permitted | inheritable) << (32 * i)
    names = [f"cap_{name}" for i, name in enumerate(NAMES) if bits >> i & 1]
    names += [f"cap_{i}" for i in range(len(NAMES), 64) if bits >> i & 1]  # a capability newer than this list
    return names, bool(magic & EFFECTIVE)


def shown(raw: bytes) -> str:
    """As getcap prints them: `cap_net_raw=ep` (or `=p` without the effective flag)."""
    names, effective = decode(raw)
    return ",".join(names) + ("=ep" if effective else "=p")


def encode(names: list[str], effective: bool = True) -> bytes:
    """A revision-2 value (what setcap writes), for tests and fixtures."""
    bits = 0
    for name in names:
        bits |= 1 << NAMES.index(name.removeprefix("cap_"))
    magic = 0x02000000 | (EFFECTIVE if effective else 0)
    return struct.pack("<IIIII", magic, bits & 0xFFFFFFFF, 0, bits >> 32, 0)
