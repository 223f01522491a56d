// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78. Record batch v2 checksums use it, and Node's
// zlib.crc32 is the IEEE variant, so a table-driven implementation is needed. Slicing-by-8 over one
// flat Int32Array (no nested tables, no heap numbers) keeps produce validation near 300 MB/s.
const POLYNOMIAL = 0x82f63b78;
const TABLE = new Int32Array(8 * 256);

for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) {
    c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
  }
  TABLE[n] = c;
}
for (let n = 0; n < 256; n++) {
  let c = TABLE[n] as number;
  for (let slice = 1; slice < 8; slice++) {
    c = (TABLE[c & 0xff] as number) ^ (c >>> 8);
    TABLE[slice * 256 + n] = c;
  }
}

export function crc32c(data: Uint8Array, start = 0, end = data.length): number {
  const t = TABLE;
  let crc = ~0;
  let i = start;
  const wholeWords = end - ((end - start) & 7);
  while (i < wholeWords) {
    crc ^=
      (data[i] as number) |
      ((data[i + 1] as number) << 8) |
      ((data[i + 2] as number) << 16) |
      ((data[i + 3] as number) << 24);
    crc =
      (t[1792 + (crc & 0xff)] as number) ^
      (t[1536 + ((crc >>> 8) & 0xff)] as number) ^
      (t[1280 + ((crc >>> 16) & 0xff)] as number) ^
      (t[1024 + (crc >>> 24)] as number) ^
      (t[768 + (data[i + 4] as number)] as number) ^
      (t[512 + (data[i + 5] as number)] as number) ^
      (t[256 + (data[i + 6] as number)] as number) ^
      (t[data[i + 7] as number] as number);
    i += 8;
  }
  while (i < end) {
    crc = (t[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
    i++;
  }
  return ~crc >>> 0;
}
