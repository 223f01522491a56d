// Zigzag + base-128 varints as used inside record batch v2 (protobuf encoding).

export interface VarintRead {
  value: number;
  bytes: number;
}

export interface VarlongRead {
  value: bigint;
  bytes: number;
}

export function zigzagEncode32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

export function zigzagDecode32(encoded: number): number {
  return (encoded >>> 1) ^ -(encoded & 1);
}

function zigzagEncode64(value: bigint): bigint {
  return BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
}

function zigzagDecode64(encoded: bigint): bigint {
  return BigInt.asIntN(64, (encoded >> 1n) ^ -(encoded & 1n));
}

export function encodeVarint(value: number): Buffer {
  let remaining = zigzagEncode32(value);
  const out: number[] = [];
  while (remaining > 0x7f) {
    out.push((remaining & 0x7f) | 0x80);
    remaining >>>= 7;
  }
  out.push(remaining);
  return Buffer.from(out);
}

export function decodeVarint(buf: Uint8Array, offset: number): VarintRead {
  let result = 0;
  let shift = 0;
  let i = offset;
  for (;;) {
    if (i >= buf.length) {
      throw new RangeError("varint runs past the end of the buffer");
    }
    const byte = buf[i++] as number;
    if (shift === 28) {
      if (byte > 0x0f) {
        throw new RangeError("varint longer than 32 bits");
      }
      result = (result | (byte << 28)) >>> 0;
      break;
    }
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) {
      result >>>= 0;
      break;
    }
    shift += 7;
  }
  return { value: zigzagDecode32(result), bytes: i - offset };
}

export function encodeVarlong(value: bigint): Buffer {
  let remaining = zigzagEncode64(value);
  const out: number[] = [];
  while (remaining > 0x7fn) {
    out.push(Number(remaining & 0x7fn) | 0x80);
    remaining >>= 7n;
  }
  out.push(Number(remaining));
  return Buffer.from(out);
}

export function decodeVarlong(buf: Uint8Array, offset: number): VarlongRead {
  let result = 0n;
  let shift = 0n;
  let i = offset;
  for (;;) {
    if (i >= buf.length) {
      throw new RangeError("varlong runs past the end of the buffer");
    }
    if (shift > 63n) {
      throw new RangeError("varlong longer than 64 bits");
    }
    const byte = buf[i++] as number;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) {
      break;
    }
    shift += 7n;
  }
  return { value: zigzagDecode64(BigInt.asUintN(64, result)), bytes: i - offset };
}
