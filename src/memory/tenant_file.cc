#include "src/memory/tenant_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "src/core/text.h"

namespace spillway {
namespace {

constexpr char kCheckText[] = "spillway-tenants-check";

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string encode_id(std::string_view id) {
  std::string out;
  for (unsigned char c : id) {
    if (c <= ' ' || c >= 0x7f || c == '%') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> decode_id(std::string_view text) {
  std::optional<std::string> id = percent_decoded(text);
  if (!id || id->empty()) return std::nullopt;
  return id;
}

std::string header_line(const KeyDigest& digest) {
  return "# spillway tenants v1 " + std::string(key_hash_name(digest.hash())) + " " +
         encode_id(digest.of(kCheckText)) + "\n";
}

std::string put_line(std::string_view id, const TenantRecord& record) {
  return "P " + encode_id(id) + " " + encode_tenant_record(record) + "\n";
}

// Writes all of `data` (write(2) may write less), then fdatasync.
Result<void> write_durably(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(Error{Errc::kUnavailable, system_error("tenants_file " + path)});
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fdatasync(fd) != 0) {
    return std::unexpected(
        Error{Errc::kUnavailable, system_error("tenants_file " + path + ": fdatasync")});
  }
  return {};
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::unique_ptr<FileTenantDirectory>> FileTenantDirectory::open(
    std::string path, const KeyHashOptions& key_hash) {
  auto digest = KeyDigest::make(key_hash);
  if (!digest) return std::unexpected(digest.error());
  std::unique_ptr<FileTenantDirectory> directory(
      new FileTenantDirectory(std::move(*digest), std::move(path)));
  if (!directory->path_.empty()) {
    if (auto loaded = directory->load_and_compact(); !loaded) {
      return std::unexpected(loaded.error());
    }
  }
  return directory;
}

FileTenantDirectory::~FileTenantDirectory() {
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<void> FileTenantDirectory::load_and_compact() {
  const std::string& path = path_;
  // One process per file: a second one would rename a compacted copy over the journal the first
  // is appending to, and the first one's later writes would go to the file no one reads.
  const std::string lock = path + ".lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return invalid_argument(system_error("tenants_file lock " + lock));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return invalid_argument("tenants_file " + path + " is in use by another process (" + lock +
                            " is locked): one spillway serve per tenants file");
  }
  std::vector<TenantEntry> entries;
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream buffer;
      buffer << in.rdbuf();
      const std::string text = buffer.str();
      std::map<std::string, TenantRecord> records;
      std::size_t start = 0, line_number = 0;
      const std::string expected_header = header_line(digest());
      while (start < text.size()) {
        ++line_number;
        const std::size_t end = text.find('\n', start);
        if (end == std::string::npos) {  // a write cut short: never acknowledged
          ++torn_lines_;
          break;
        }
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        const std::string where = "tenants_file " + path + " line " + std::to_string(line_number);
        if (line_number == 1) {
          if (std::string(line) + "\n" != expected_header) {
            return invalid_argument(
                where + ": written under another backend.key_hash or key secret (" +
                std::string(line.substr(0, 60)) +
                "); its records would match no key. Move the file away to start empty");
          }
          continue;
        }
        if (line.size() < 3 || (line[0] != 'P' && line[0] != 'D') || line[1] != ' ') {
          return invalid_argument(where + ": expected \"P <id> <record>\" or \"D <id>\"");
        }
        const std::string_view rest = line.substr(2);
        const std::size_t space = rest.find(' ');
        auto id = decode_id(rest.substr(0, space));
        if (!id) return invalid_argument(where + ": the id is malformed");
        if (line[0] == 'D') {
          records.erase(*id);
          continue;
        }
        if (space == std::string_view::npos) return invalid_argument(where + ": no record");
        auto record = decode_tenant_record(rest.substr(space + 1));
        if (!record) return invalid_argument(where + ": " + record.error().message);
        records[*id] = std::move(*record);
      }
      for (auto& [id, record] : records) entries.push_back({id, std::move(record)});
    } else if (errno != ENOENT) {
      return invalid_argument(system_error("tenants_file " + path + " cannot be read"));
    }
  }
  // One line per record, written beside the journal and renamed over it.
  std::string compacted = header_line(digest());
  for (const TenantEntry& entry : entries) compacted += put_line(entry.id, entry.record);
  const std::string temporary = path + ".tmp";
  const int tmp = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (tmp < 0) return invalid_argument(system_error("tenants_file " + temporary));
  auto written = write_durably(tmp, compacted, temporary);
  ::close(tmp);
  if (!written) return invalid_argument(written.error().message);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return invalid_argument(system_error("tenants_file: rename to " + path));
  }
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) return invalid_argument(system_error("tenants_file " + path));
  replace_all(std::move(entries));
  return {};
}

Result<std::vector<std::optional<TenantRecord>>> FileTenantDirectory::write(
    std::span<const Change> changes, bool want_before) {
  std::vector<std::optional<TenantRecord>> before;
  if (want_before) {
    for (const Change& change : changes) {
      auto found = find_id(change.first);
      before.push_back(found ? std::optional<TenantRecord>(*found) : std::nullopt);
    }
  } else {
    before.resize(changes.size());
  }
  if (fd_ < 0) return before;  // in this process only
  std::string lines;
  for (const auto& [id, record] : changes) {
    lines += record ? put_line(id, *record) : "D " + encode_id(id) + "\n";
  }
  if (failed_) {
    return std::unexpected(
        Error{Errc::kUnavailable, "tenants_file " + path_ +
                                      ": an earlier write could not be made durable; restart "
                                      "spillway serve once the disk is fixed"});
  }
  // Where this change starts: a write that fails half-way is cut back to it, so the journal never
  // holds a partial line followed by later ones (which would make it unreadable at the next start).
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (auto written = write_durably(fd_, lines, path_); !written) {
    if (end < 0 || ::ftruncate(fd_, end) != 0) failed_ = true;
    // After a failed fdatasync the kernel may have dropped the pages it could not write, and a
    // later fdatasync may succeed without them: nothing written since could be trusted.
    if (written.error().message.find("fdatasync") != std::string::npos) failed_ = true;
    return std::unexpected(written.error());
  }
  return before;
}

}  // namespace spillway
