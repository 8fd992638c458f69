// The bounds of a LibTorch archive (ZIP records, pickles, code records) checked before LibTorch reads it.
#include "archive_bounds.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <vector>

namespace stiefel::training::checkpoint {
namespace {

// Little-endian fields of the ZIP format (APPNOTE.TXT); out-of-range reads return 0.
std::uint64_t le(const std::string& b, std::size_t at, int width) {
  if (at > b.size() || b.size() - at < std::size_t(width)) return 0;
  std::uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | std::uint8_t(b[at + std::size_t(i)]);
  return v;
}

// A tensor's storage as data.pkl names it: persistent id ("storage", torch.<Type>Storage, key,
// location, numel), its bytes in the record data/<key>.
struct StorageRef {
  std::string type;
  std::uint64_t bytes = 0;
};

// The bytes of one element of a storage type LibTorch writes; 0 for any other name.
std::uint64_t storage_element_size(const std::string& global) {
  static const std::map<std::string, std::uint64_t> sizes = {
      {"torch\nFloatStorage", 4},    {"torch\nDoubleStorage", 8},       {"torch\nHalfStorage", 2},
      {"torch\nBFloat16Storage", 2}, {"torch\nLongStorage", 8},         {"torch\nIntStorage", 4},
      {"torch\nShortStorage", 2},    {"torch\nCharStorage", 1},         {"torch\nByteStorage", 1},
      {"torch\nBoolStorage", 1},     {"torch\nComplexFloatStorage", 8}, {"torch\nComplexDoubleStorage", 16}};
  const auto it = sizes.find(global);
  return it == sizes.end() ? 0 : it->second;
}

// BINPERSID's argument, the tuple just closed: ("storage", type, key, location, numel), all literal;
// the key a decimal index used once, the storage's size numel × the type's element size.
void add_storage_ref(const std::optional<std::vector<std::string>>& closed, const std::string& record,
                     const std::function<void(const std::string&)>& bad, std::map<std::string, StorageRef>& storages) {
  const std::uint64_t element = closed && closed->size() == 5 && (*closed)[1].rfind("g:", 0) == 0
                                    ? storage_element_size((*closed)[1].substr(2))
                                    : 0;
  if (!closed || closed->size() != 5 || (*closed)[0] != "s:storage" || element == 0 ||
      (*closed)[2].rfind("s:", 0) != 0 || (*closed)[3].rfind("s:", 0) != 0 || (*closed)[4].rfind("i:", 0) != 0)
    bad(record + ": a persistent id that is not a storage reference LibTorch writes");
  const std::string key = (*closed)[2].substr(2);
  // LibTorch writes a storage's key as its decimal index.
  if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
    bad(record + ": a storage key that is not a decimal index");
  const std::uint64_t numel = std::stoull((*closed)[4].substr(2));
  if (!storages.emplace(key, StorageRef{(*closed)[1], numel * element}).second)
    bad(record + ": storage " + key + " is referenced twice");
}

// LibTorch's unpickler reserves the length a string or bytes opcode declares before it reads it: a
// damaged length field makes it allocate up to 4 GiB (or 2^64 bytes) for a 60 kB file. Every
// length-prefixed opcode of a pickle record must fit the bytes that follow it; an opcode outside
// pickle's protocols 0–2 (LibTorch writes protocol 2) is refused.
// LibTorch also trusts each storage reference: a key naming another tensor's record, or a count
// that does not match the record's size, gives a tensor whose memory is not its own (freed later
// as a pointer never allocated). Every persistent id must be a storage tuple of literal fields,
// each key used once; the caller matches the keys with the archive's records.
void check_pickle(const std::string& b, std::size_t begin, std::size_t end, const std::string& record,
                  const std::function<void(const std::string&)>& bad, std::map<std::string, StorageRef>& storages) {
  // Opcodes by what follows them: nothing; a fixed field of 1, 2, 4 or 8 bytes; a length of 1, 4
  // or 8 bytes and that many bytes; one or two newline-terminated lines.
  static const std::string none = "(0123N}])aebdltsuRQo\x81\x85\x86\x87\x88\x89";
  static const std::string fixed1 = "Kqh\x80\x82", fixed2 = "M\x83", fixed4 = "Jrj\x84", fixed8 = "G\x95";
  static const std::string counted1 = "CU\x8a\x8c", counted4 = "XTB\x8b", counted8 = "\x8d\x8e";
  static const std::string line1 = "ILFSVP", line2 = "ci";
  static const std::string pops_mark = "tlde\x90u";  // TUPLE, LIST, DICT, APPENDS, ADDITEMS, SETITEMS
  const auto in = [](const std::string& set, char op) { return set.find(op) != std::string::npos; };
  // The literal fields since the innermost MARK ("?" for anything else), the memo's literals, and
  // the fields of the tuple the last TUPLE closed.
  struct Frame {
    std::vector<std::string> fields;
  };
  std::vector<Frame> marks;
  std::map<std::uint64_t, std::string> memo;
  std::optional<std::string> literal;  // what the last opcode pushed, when a literal
  std::optional<std::vector<std::string>> closed;
  std::size_t at = begin;
  std::uint64_t puts = 0;  // the unpickler grows its memo to each PUT's id: ids must count up from 0
  while (at < end) {
    const char op = b[at++];
    if (op == '.') return;  // STOP
    std::optional<std::string> pushed;
    if (op == 'Q') add_storage_ref(closed, record, bad, storages);  // BINPERSID
    closed.reset();
    if (op == '(') marks.emplace_back();
    if (in(pops_mark, op)) {
      if (marks.empty()) bad(record + ": a pickle that closes a MARK it never opened");
      if (op == 't') closed = marks.back().fields;
      marks.pop_back();
    }
    if (in(line1, op) || in(line2, op)) {
      std::string text;
      for (int line = in(line2, op) ? 2 : 1; line > 0; --line) {
        const std::size_t nl = b.find('\n', at);
        if (nl == std::string::npos || nl >= end) bad(record + ": a truncated pickle");
        if (!text.empty()) text += '\n';
        text.append(b, at, nl - at);
        at = nl + 1;
      }
      if (op == 'c') pushed = "g:" + text;  // GLOBAL module\nname
    } else if (!in(none, op)) {
      const std::size_t head = in(fixed1, op) || in(counted1, op)   ? 1
                               : in(fixed2, op)                     ? 2
                               : in(fixed4, op) || in(counted4, op) ? 4
                               : in(fixed8, op) || in(counted8, op) ? 8
                                                                    : 0;
      if (head == 0) {
        static const char* hex = "0123456789abcdef";
        bad(record + ": pickle opcode 0x" + std::string{hex[std::uint8_t(op) >> 4], hex[std::uint8_t(op) & 15]} +
            " is not one LibTorch reads");
      }
      if (head > end - at) bad(record + ": a truncated pickle");
      const std::uint64_t field = le(b, at, int(head));
      if ((op == 'q' || op == 'r') && field != puts++) bad(record + ": a pickle memo id out of sequence");
      const bool counted = in(counted1, op) || in(counted4, op) || in(counted8, op);
      const std::uint64_t length = counted ? field : 0;
      at += head;
      if (length > end - at) bad(record + ": a pickle field longer than its record");
      if (op == 'X') pushed = "s:" + b.substr(at, std::size_t(length));             // BINUNICODE
      if (op == 'K' || op == 'M') pushed = "i:" + std::to_string(field);            // BININT1, BININT2
      if (op == 'J' && field < 0x80000000u) pushed = "i:" + std::to_string(field);  // BININT, non-negative
      if ((op == 'h' || op == 'j') && memo.count(field)) pushed = memo[field];      // BINGET, LONG_BINGET
      if ((op == 'q' || op == 'r') && literal) memo[field] = *literal;              // BINPUT, LONG_BINPUT
      at += std::size_t(length);
    }
    // A PUT leaves the stack as it is; anything else pushes a literal or something else ("?").
    if (op == 'q' || op == 'r') continue;
    literal = pushed;
    if (!marks.empty() && op != '(') marks.back().fields.push_back(pushed.value_or("?"));
  }
  bad(record + ": a pickle without its STOP");
}

// The record's bytes, inflated when deflated (to exactly its declared size).
std::string record_bytes(const std::string& b, std::size_t data, std::uint64_t compressed, std::uint64_t size,
                         std::uint64_t method, const std::string& record,
                         const std::function<void(const std::string&)>& bad) {
  if (method == 0) return b.substr(data, std::size_t(size));
  std::string out(std::size_t(size), '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) bad(record + ": cannot be inflated");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(b.data() + data));
  z.avail_in = uInt(compressed);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(size);
  const int rc = inflate(&z, Z_FINISH);
  const bool whole = rc == Z_STREAM_END && z.total_out == size;
  inflateEnd(&z);
  if (!whole) bad(record + ": a deflated record that does not inflate to its size");
  return out;
}

// LibTorch compiles the TorchScript class of every nested archive from its code record, and its
// compiler crashes on some damaged code. A checkpoint's code records are class declarations only:
// `class Module(Module):`, then lines declaring parameters, buffers and typed attributes. Anything
// else is refused before LibTorch compiles it.
void check_code_record(const std::string& code, const std::string& record,
                       const std::function<void(const std::string&)>& bad) {
  static const std::string type =
      R"((Tensor|int|float|str|bool|Tuple\[float, float\]|__torch__(\.___torch_mangle_[0-9]+)?\.Module))";
  static const std::regex line(R"(  (__parameters__|__buffers__|__annotations__) = \[("[A-Za-z0-9_./]*", )*\])"
                               R"(|  __annotations__\["[A-Za-z0-9_./]*"\] = )" +
                               type + R"(|  [A-Za-z_][A-Za-z0-9_]* : )" + type + "|");
  std::size_t at = 0, n = 0;
  while (at <= code.size()) {
    std::size_t nl = code.find('\n', at);
    if (nl == std::string::npos) nl = code.size();
    const std::string text = code.substr(at, nl - at);
    if (n++ == 0 ? text != "class Module(Module):" : !std::regex_match(text, line))
      bad(record + ": line " + std::to_string(n) + " is not a class declaration LibTorch writes");
    at = nl + 1;
  }
}

// The ZIP central directory's entry count and offset: from the end record, or from the ZIP64 end
// record when its locator precedes the end record, as miniz (LibTorch's reader) does (LibTorch
// always writes one).
std::pair<std::uint64_t, std::uint64_t> zip_directory(const std::string& b,
                                                      const std::function<void(const std::string&)>& bad) {
  if (b.size() < 22) bad("too short for a ZIP archive");
  std::size_t eocd = std::string::npos;
  for (std::size_t at = b.size() - 22 + 1; at-- > 0 && b.size() - at <= 22 + 65535;)
    if (le(b, at, 4) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd == std::string::npos) bad("no ZIP end-of-directory record");
  std::uint64_t entries = le(b, eocd + 10, 2), dir_offset = le(b, eocd + 16, 4);
  if (eocd >= 20 && le(b, eocd - 20, 4) == 0x07064b50) {
    const std::uint64_t z = le(b, eocd - 20 + 8, 8);
    if (z > b.size() || 56 > b.size() - z || le(b, std::size_t(z), 4) != 0x06064b50)
      bad("a damaged ZIP64 end-of-directory record");
    entries = le(b, std::size_t(z) + 32, 8);
    dir_offset = le(b, std::size_t(z) + 48, 8);
  } else if (entries == 0xFFFF || dir_offset == 0xFFFFFFFF) {
    bad("a ZIP64 archive without its locator");
  }
  return {entries, dir_offset};
}

// Every storage a data.pkl references has its record (found case-blind, as miniz does), of exactly
// the size the reference declares.
void check_storage_records(const std::map<std::string, std::map<std::string, StorageRef>>& storages,
                           const std::map<std::string, std::uint64_t>& record_sizes,
                           const std::function<void(const std::string&)>& bad) {
  for (const auto& [folder, refs] : storages)
    for (const auto& [key, ref] : refs) {
      std::string lower = folder + "data/" + key;
      for (auto& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      const auto it = record_sizes.find(lower);
      if (it == record_sizes.end()) bad(folder + "data.pkl: storage " + key + " has no record");
      if (it->second != ref.bytes)
        bad(folder + "data.pkl: storage " + key + " declares " + std::to_string(ref.bytes) +
            " bytes, its record holds " + std::to_string(it->second));
    }
}

}  // namespace

// A LibTorch archive is a ZIP file of stored records (the tensors) and deflated ones (its code).
// Its reader allocates each record at the size the central directory declares: a damaged size
// field makes it allocate gigabytes for a 60 kB file. Every record must lie inside the file, at a
// size its method can produce; the archive must have at most 4096 records.
void check_archive_bounds(const std::string& b, const std::function<void(const std::string&)>& bad) {
  // [at, at + n) lies inside the file (no overflow for any at, n).
  const auto inside = [&](std::uint64_t at, std::uint64_t n) { return at <= b.size() && n <= b.size() - at; };
  const auto [entries, dir_offset] = zip_directory(b, bad);
  std::map<std::string, std::uint64_t> record_sizes;
  std::map<std::string, std::map<std::string, StorageRef>> storages;  // by data.pkl's folder
  std::uint64_t at = dir_offset;
  for (std::uint64_t k = 0; k < entries; ++k) {
    if (!inside(at, 46) || le(b, std::size_t(at), 4) != 0x02014b50) bad("a damaged ZIP central directory");
    const std::size_t e = std::size_t(at);
    const std::uint64_t method = le(b, e + 10, 2), name_len = le(b, e + 28, 2), extra_len = le(b, e + 30, 2),
                        comment_len = le(b, e + 32, 2);
    if (!inside(e, 46 + name_len + extra_len + comment_len)) bad("a damaged ZIP central directory");
    std::uint64_t compressed = le(b, e + 20, 4), size = le(b, e + 24, 4), offset = le(b, e + 42, 4);
    // ZIP64 extra field (id 1): the 8-byte values of the fields set to 0xFFFFFFFF, in this order.
    for (std::size_t x = e + 46 + name_len; x + 4 <= e + 46 + name_len + extra_len;) {
      const std::uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      if (id == 1) {
        std::size_t f = x + 4;
        if (size == 0xFFFFFFFF) size = le(b, f, 8), f += 8;
        if (compressed == 0xFFFFFFFF) compressed = le(b, f, 8), f += 8;
        if (offset == 0xFFFFFFFF) offset = le(b, f, 8);
      }
      x += 4 + len;
    }
    // Stored records (the tensors) are their own size; deflated ones (LibTorch's code records)
    // expand at most 1032-fold, deflate's limit.
    if (method != 0 && method != 8)
      bad("a record of ZIP method " + std::to_string(method) + " (neither stored nor deflated)");
    if (!inside(offset, compressed) || (method == 0 ? size != compressed : size > 1032 * compressed + 1024))
      bad("a record that does not fit the file");
    std::string record = b.substr(e + 46, std::size_t(name_len));
    // miniz finds a name case-blind, up to its first NUL: a name must be printable and unique
    // after lower-casing, or a lookup could find another record than the one checked here.
    if (std::any_of(record.begin(), record.end(), [](char ch) { return std::uint8_t(ch) < 0x20 || ch == 0x7f; }))
      bad("a record name with a control character");
    std::string lower = record;
    for (auto& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (!record_sizes.emplace(lower, size).second) bad("two records named " + record);
    const auto ends = [&](const char* suffix) {
      const std::size_t k = std::strlen(suffix);
      return lower.size() >= k && lower.compare(lower.size() - k, k, suffix) == 0;
    };
    const bool pickle = ends(".pkl") || ends("_pkl"), code = ends(".py");
    // Every record's bytes are the ones its CRC-32 was taken of (LibTorch's reader does not check):
    // a flipped bit in a tensor is a damaged checkpoint, not a different model.
    if (!inside(offset, 30) || le(b, std::size_t(offset), 4) != 0x04034b50) bad(record + ": no local ZIP header");
    const std::uint64_t data = offset + 30 + le(b, std::size_t(offset) + 26, 2) + le(b, std::size_t(offset) + 28, 2);
    if (!inside(data, compressed)) bad(record + ": a record that does not fit the file");
    const std::string bytes =
        method == 0 ? std::string() : record_bytes(b, std::size_t(data), compressed, size, method, record, bad);
    const auto* start = reinterpret_cast<const Bytef*>(method == 0 ? b.data() + data : bytes.data());
    uLong crc = crc32(0L, Z_NULL, 0);
    for (std::uint64_t done = 0; done < size;) {  // crc32 takes at most 4 GiB a call
      const std::uint64_t n = std::min<std::uint64_t>(size - done, std::uint64_t(1) << 30);
      crc = crc32(crc, start + done, uInt(n));
      done += n;
    }
    if (crc != le(b, e + 16, 4)) bad(record + ": its bytes do not match their CRC-32 (a damaged record)");
    if (pickle || code) {
      if (pickle && method != 0) bad(record + ": a pickle record that is not stored in place");
      if (pickle) {
        std::map<std::string, StorageRef> refs;
        check_pickle(b, std::size_t(data), std::size_t(data + size), record, bad, refs);
        const bool data_pkl = record.size() >= 8 && record.compare(record.size() - 8, 8, "data.pkl") == 0;
        if (!refs.empty() && !data_pkl) bad(record + ": storage references outside a data.pkl record");
        if (data_pkl) storages[record.substr(0, record.size() - 8)] = std::move(refs);
      }
      if (code) check_code_record(method == 0 ? b.substr(std::size_t(data), std::size_t(size)) : bytes, record, bad);
    }
    at += 46 + name_len + extra_len + comment_len;
  }
  check_storage_records(storages, record_sizes, bad);
}

}  // namespace stiefel::training::checkpoint
