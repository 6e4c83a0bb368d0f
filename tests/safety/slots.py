"""slots.py: Redis Cluster hash slots (CRC16/XMODEM of the hash tag)."""


def _crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    """The slot of key: its {tag} when non-empty, else the whole key."""
    b = key.encode() if isinstance(key, str) else key
    start = b.find(b"{")
    if start >= 0:
        end = b.find(b"}", start + 1)
        if end > start + 1:
            b = b[start + 1:end]
    return _crc16(b) % 16384
