"""What an Arrow IPC file (a `format: hf` .arrow/.feather/.ipc dataset) decodes to, read from
its messages' headers before pyarrow decodes a batch.

An IPC body may be compressed (LZ4 or ZSTD, per buffer: a Feather file's default): pyarrow
decompresses a whole record batch when it reads it, so a 30 KB file of one repeated value can
become gigabytes before any row is counted. Each compressed buffer starts with its
uncompressed length (a little-endian int64, -1 when that buffer was stored as it is), and the
message header (a flatbuffer: Message -> RecordBatch -> buffers) says where each buffer lies;
the sum is what the batch decodes to. Only the few flatbuffer fields needed are read here.
"""

from __future__ import annotations

import struct
from typing import Any

#: MessageHeader union tags (Message.fbs)
_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3


class Malformed(ValueError):
    """A message header that does not hold what the Arrow format says it holds."""


class _Table:
    """One flatbuffer table: its fields by index (absent fields are None)."""

    def __init__(self, buf: bytes, pos: int):
        if not 0 <= pos <= len(buf) - 4:
            raise Malformed("table outside its message")
        self.buf, self.pos = buf, pos
        vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        if not 0 <= vtable <= len(buf) - 4:
            raise Malformed("vtable outside its message")
        self.vtable = vtable
        self.vsize = struct.unpack_from("<H", buf, vtable)[0]

    def _offset(self, index: int) -> int:
        at = 4 + 2 * index
        if at >= self.vsize:
            return 0
        return struct.unpack_from("<H", self.buf, self.vtable + at)[0]

    def scalar(self, index: int, fmt: str, default: Any) -> Any:
        off = self._offset(index)
        return default if off == 0 else struct.unpack_from(fmt, self.buf, self.pos + off)[0]

    def _target(self, index: int) -> int | None:
        off = self._offset(index)
        if off == 0:
            return None
        at = self.pos + off
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, index: int) -> _Table | None:
        target = self._target(index)
        return None if target is None else _Table(self.buf, target)

    def structs(self, index: int, size: int) -> list[int]:
        """Positions of the elements of a vector of structs of `size` bytes."""
        target = self._target(index)
        if target is None:
            return []
        count = struct.unpack_from("<I", self.buf, target)[0]
        if target + 4 + count * size > len(self.buf):
            raise Malformed("vector outside its message")
        return [target + 4 + i * size for i in range(count)]


def _body_bound(batch: _Table, body: Any) -> int:
    """Bytes the buffers of one RecordBatch table decode to."""
    compressed = batch.table(3) is not None  # RecordBatch.compression: BodyCompression
    view = memoryview(body) if body is not None else memoryview(b"")
    total = 0
    for at in batch.structs(2, 16):  # RecordBatch.buffers: [Buffer {offset: long, length: long}]
        offset, length = struct.unpack_from("<qq", batch.buf, at)
        if offset < 0 or length < 0 or offset + length > len(view):
            raise Malformed("a buffer outside the message body")
        if compressed and length >= 8:
            size = struct.unpack_from("<q", view, offset)[0]
            total += length - 8 if size == -1 else max(size, 0)
        else:
            total += length
    return total


def decoded_size(data: bytes) -> int:
    """What the record and dictionary batches of an Arrow IPC stream or file decode to, in
    bytes, from their headers alone (nothing is decompressed). Raises Malformed (or pyarrow's
    ArrowInvalid) for a file that is not Arrow IPC."""
    import pyarrow as pa

    start = 8 if data[:6] == b"ARROW1" else 0  # the file format wraps a stream in magic and a footer
    reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(data[start:] if start else data))
    total = 0
    for message in reader:
        meta = bytes(message.metadata)
        try:
            root = _Table(meta, struct.unpack_from("<I", meta, 0)[0])
            kind = root.scalar(1, "<B", 0)  # Message.header_type
            header = root.table(2)  # Message.header
            if header is None or kind not in (_RECORD_BATCH, _DICTIONARY_BATCH):
                continue
            batch = header if kind == _RECORD_BATCH else header.table(1)  # DictionaryBatch.data
            if batch is not None:
                total += _body_bound(batch, message.body)
        except struct.error:
            raise Malformed("a message header cut short") from None
    return total
