import { Inflate } from 'fflate';

/**
 * The entries of a zip archive held in memory, read from its central directory, and inflated with a byte count: what
 * an entry unpacks to is counted as it is unpacked and stopped at a budget, whatever sizes the archive declares about
 * itself (those are never read). Nothing is written anywhere. ZIP64 archives are read too: some producers write ZIP64
 * records even for small files (Info-ZIP's `zip -fz`, the streaming writers of .NET and Apache POI).
 */

export class ZipUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ZipUnreadable';
  }
}

/** Thrown when the entries unpacked together pass the budget: a zip bomb, or a sheet far bigger than any upload. */
export class ZipBudgetExceeded extends Error {
  readonly budget: number;
  constructor(budget: number) {
    super(`it unpacks to more than ${Math.floor(budget / 2 ** 20)} MiB`);
    this.name = 'ZipBudgetExceeded';
    this.budget = budget;
  }
}

type ZipEntry = { name: string; method: number; compressedSize: number; localHeaderOffset: number };

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const ZIP64_END_OF_CENTRAL_DIRECTORY = 0x06064b50;
const ZIP64_END_LOCATOR = 0x07064b50;
const CENTRAL_DIRECTORY_ENTRY = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
/** What a field too small for its value holds; the value is then in a ZIP64 record or extra field. */
const ZIP64_MARKER = 0xffffffff;
const ZIP64_COUNT_MARKER = 0xffff;
/** The header id of the ZIP64 extended information extra field. */
const ZIP64_EXTRA = 0x0001;
const STORED = 0;
const DEFLATED = 8;
/** More entries than any workbook has (a sheet per entry, Excel allows 255 sheets or so per practical workbook). */
const MAX_ENTRIES = 10_000;
/**
 * Compressed bytes given to the inflater at a time. Deflate unpacks at most about 1,032 bytes per byte, so one slice
 * unpacks to at most about 4 MiB before the budget is checked again.
 */
const SLICE_BYTES = 4 * 1024;

export class ZipArchive {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #entries = new Map<string, ZipEntry>();
  #unpackedBytes = 0;
  readonly #budget: number;

  /** `budget`: the most bytes every entry read from this archive may unpack to, together. */
  constructor(bytes: Uint8Array, budget: number) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#budget = budget;
    this.#readDirectory();
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** The bytes unpacked so far, every entry together. */
  get unpackedBytes(): number {
    return this.#unpackedBytes;
  }

  /**
   * The entry's bytes as it unpacks, a slice at a time (each at most about 4 MiB); throws ZipBudgetExceeded as soon as
   * the archive's budget is passed, and ZipUnreadable for a missing entry or damaged data.
   */
  *unpack(name: string): Generator<Uint8Array> {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new ZipUnreadable(`it has no ${name}`);
    const at = entry.localHeaderOffset;
    if (at + 30 > this.#bytes.length || this.#view.getUint32(at, true) !== LOCAL_FILE_HEADER) {
      throw new ZipUnreadable(`the entry ${name} is damaged`);
    }
    const start = at + 30 + this.#view.getUint16(at + 26, true) + this.#view.getUint16(at + 28, true);
    const end = start + entry.compressedSize;
    if (end > this.#bytes.length) throw new ZipUnreadable(`the entry ${name} is cut short`);
    if (entry.method === STORED) {
      for (let from = start; from < end; from += SLICE_BYTES) yield this.#counted([this.#bytes.subarray(from, Math.min(end, from + SLICE_BYTES))]);
      return;
    }
    if (entry.method !== DEFLATED) throw new ZipUnreadable(`the entry ${name} uses a compression method (${entry.method}) other than deflate`);
    let ended = false;
    let unpacked: Uint8Array[] = [];
    let unpackedLength = 0;
    const inflater = new Inflate((chunk, final) => {
      unpacked.push(chunk);
      unpackedLength += chunk.length;
      // Checked as it unpacks too: one slice can never make more than the budget's worth of memory.
      if (this.#unpackedBytes + unpackedLength > this.#budget) throw new ZipBudgetExceeded(this.#budget);
      if (final) ended = true;
    });
    const pushes = Math.max(1, Math.ceil((end - start) / SLICE_BYTES));
    for (let index = 0; index < pushes; index++) {
      const from = start + index * SLICE_BYTES;
      try {
        inflater.push(this.#bytes.subarray(from, Math.min(end, from + SLICE_BYTES)), index === pushes - 1);
      } catch (error) {
        if (error instanceof ZipBudgetExceeded) throw error;
        throw new ZipUnreadable(`the entry ${name} is damaged (${error instanceof Error ? error.message : String(error)})`);
      }
      const slice = this.#counted(unpacked);
      unpacked = [];
      unpackedLength = 0;
      if (slice.length > 0) yield slice;
    }
    if (!ended) throw new ZipUnreadable(`the entry ${name} is cut short`);
  }

  #counted(chunks: Uint8Array[]): Uint8Array {
    const slice = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    this.#unpackedBytes += slice.length;
    if (this.#unpackedBytes > this.#budget) throw new ZipBudgetExceeded(this.#budget);
    return slice;
  }

  #readDirectory(): void {
    const bytes = this.#bytes;
    const view = this.#view;
    const earliest = Math.max(0, bytes.length - 22 - 0xffff);
    let end = -1;
    for (let at = bytes.length - 22; at >= earliest; at--) {
      if (view.getUint32(at, true) === END_OF_CENTRAL_DIRECTORY) {
        end = at;
        break;
      }
    }
    if (end < 0) throw new ZipUnreadable('it is not a zip archive (no central directory)');
    const directory = this.#directoryPlace(end);
    if (directory.count > MAX_ENTRIES) throw new ZipUnreadable(`it has more than ${MAX_ENTRIES} entries`);
    let at = directory.offset;
    const decoder = new TextDecoder();
    for (let index = 0; index < directory.count; index++) {
      if (at + 46 > bytes.length || view.getUint32(at, true) !== CENTRAL_DIRECTORY_ENTRY) throw new ZipUnreadable('its central directory is damaged');
      const nameLength = view.getUint16(at + 28, true);
      const extraLength = view.getUint16(at + 30, true);
      const entry: ZipEntry = {
        name: decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
        method: view.getUint16(at + 10, true),
        compressedSize: view.getUint32(at + 20, true),
        localHeaderOffset: view.getUint32(at + 42, true),
      };
      const uncompressedMarked = view.getUint32(at + 24, true) === ZIP64_MARKER;
      const compressedMarked = entry.compressedSize === ZIP64_MARKER;
      const offsetMarked = entry.localHeaderOffset === ZIP64_MARKER;
      if (uncompressedMarked || compressedMarked || offsetMarked) {
        const values = this.#zip64Values(entry.name, at + 46 + nameLength, extraLength, [uncompressedMarked, compressedMarked, offsetMarked].filter(Boolean).length);
        // The size it unpacks to is skipped, as the 32-bit one is: the budget counts what is actually unpacked.
        if (uncompressedMarked) values.shift();
        if (compressedMarked) entry.compressedSize = values.shift()!;
        if (offsetMarked) entry.localHeaderOffset = values.shift()!;
      }
      this.#entries.set(entry.name, entry);
      at += 46 + nameLength + extraLength + view.getUint16(at + 32, true);
    }
  }

  /**
   * The central directory's entry count and offset. A ZIP64 end locator (20 bytes) right before the end record points
   * to the ZIP64 end record, which then holds them in 8 bytes each (the end record holding 0xFFFF and 0xFFFFFFFF marks,
   * or the same values again); marks with no locator are a damaged archive.
   */
  #directoryPlace(end: number): { count: number; offset: number } {
    const view = this.#view;
    const count = view.getUint16(end + 10, true);
    const offset = view.getUint32(end + 16, true);
    const marked = count === ZIP64_COUNT_MARKER || offset === ZIP64_MARKER;
    const locator = end - 20;
    if (locator < 0 || view.getUint32(locator, true) !== ZIP64_END_LOCATOR) {
      if (marked) throw new ZipUnreadable('its central directory is damaged (its ZIP64 end locator is missing)');
      return { count, offset };
    }
    const recordAt = view.getBigUint64(locator + 8, true);
    const record = Number(recordAt);
    if (recordAt + 56n > BigInt(locator) || view.getUint32(record, true) !== ZIP64_END_OF_CENTRAL_DIRECTORY) {
      // Four bytes that only look like a locator (the end of the last entry's data, say) in an archive that needs none.
      if (!marked) return { count, offset };
      throw new ZipUnreadable('its central directory is damaged (its ZIP64 end record is missing)');
    }
    return { count: this.#uint64(record + 32), offset: this.#uint64(record + 48) };
  }

  /**
   * The `count` values an entry's ZIP64 extended information extra field (0x0001) holds for its central directory fields
   * marked 0xFFFFFFFF: 8 bytes for each field marked, in the order uncompressed size, compressed size, local header
   * offset (a disk number may follow, of no use in an archive of one file).
   */
  #zip64Values(name: string, from: number, length: number, count: number): number[] {
    const view = this.#view;
    const end = from + length;
    if (end > this.#bytes.length) throw new ZipUnreadable('its central directory is damaged');
    for (let at = from; at + 4 <= end; at += 4 + view.getUint16(at + 2, true)) {
      if (view.getUint16(at, true) !== ZIP64_EXTRA) continue;
      if (at + 4 + 8 * count > Math.min(end, at + 4 + view.getUint16(at + 2, true))) {
        throw new ZipUnreadable(`its central directory is damaged (the ZIP64 sizes of ${name} are cut short)`);
      }
      return Array.from({ length: count }, (_, index) => this.#uint64(at + 4 + 8 * index));
    }
    throw new ZipUnreadable(`its central directory is damaged (${name} is marked ZIP64 but has no ZIP64 sizes)`);
  }

  /**
   * An 8-byte count, size or offset. Past Number.MAX_SAFE_INTEGER it is no number this reader can hold exactly, and
   * far past any archive held in memory: a damaged directory.
   */
  #uint64(at: number): number {
    const value = this.#view.getBigUint64(at, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ZipUnreadable('its central directory is damaged');
    return Number(value);
  }
}
