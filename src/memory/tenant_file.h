// The in-process store's tenant directory: records in this process, every write appended to a
// journal file (backend.tenants_file) and fdatasync'd before it returns, so a record the admin API
// acknowledged survives kill -9 and power loss. At open, the journal is read, a torn last line
// (a write the crash interrupted, never acknowledged) is dropped, and the file is rewritten with
// one line per record (to a temporary file, fsync'd, renamed over the journal, directory fsync'd).
//
// File format, one line each: a header "# spillway tenants v1 <key_hash> <check id>", then
// "P <id> <record>" (spillway/tenant_directory.h's encoding) or "D <id>". Ids are percent-encoded
// where they hold spaces, controls or '%' (only kNone's keys can). The header's check id is the
// digest of a fixed text: a file written under another key_hash or secret is refused at open,
// since none of its ids would match.
//
// One process per file: <path>.lock is flock'd while the directory lives; a second open fails.
// A write that fails (a full disk) is cut back to where it started, so the journal stays
// readable; after a failed fdatasync no further write is taken until a restart.
//
// Thread safety: as TenantDirectory (which serialises the writes).
#pragma once

#include <memory>
#include <string>

#include "spillway/tenant_directory.h"

namespace spillway {

class FileTenantDirectory final : public TenantDirectory {
 public:
  // `path` empty: records live in this process only. Errors name the file and line: unreadable,
  // a malformed line, another key_hash; or a directory that cannot be written.
  static Result<std::unique_ptr<FileTenantDirectory>> open(std::string path,
                                                           const KeyHashOptions& key_hash);
  ~FileTenantDirectory() override;

  // Lines dropped at open because the last one was cut short.
  std::size_t torn_lines() const { return torn_lines_; }

 private:
  FileTenantDirectory(KeyDigest digest, std::string path)
      : TenantDirectory(std::move(digest)), path_(std::move(path)) {}
  Result<void> load_and_compact();
  Result<std::vector<std::optional<TenantRecord>>> write(std::span<const Change> changes,
                                                         bool want_before) override;

  std::string path_;
  int fd_ = -1;
  int lock_fd_ = -1;     // <path>.lock, flock'd while this directory lives
  bool failed_ = false;  // a write could not be cut back, or fdatasync failed: no more writes
  std::size_t torn_lines_ = 0;
};

}  // namespace spillway
