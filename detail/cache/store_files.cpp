// The kernel-cache store's file operations over POSIX calls.
#include "detail/cache/store_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/util>

#include <atomic>
#include <cerrno>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

namespace dnngraph::detail {

namespace {

Error io_error(std::string_view doing, const std::filesystem::path& path, int error_number) {
  return Error{ErrorCode::IoFailure, "kernel cache store: " + std::string(doing) + " " +
                                         path.string() + ": " +
                                         std::generic_category().message(error_number)};
}

// Whether `name` is a temporary replace_file makes: "<file>.json.tmp.<pid>.<n>".
bool is_temporary(std::string_view name) {
  const auto digits = [](std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  };
  constexpr std::string_view marker = ".json.tmp.";
  const std::size_t at = name.rfind(marker);
  if (at == std::string_view::npos || at == 0) {
    return false;
  }
  const std::string_view tail = name.substr(at + marker.size());
  const std::size_t dot = tail.find('.');
  return dot != std::string_view::npos && digits(tail.substr(0, dot)) &&
         digits(tail.substr(dot + 1));
}

Result<void> write_all(int fd, std::string_view text, const std::filesystem::path& path) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return std::unexpected(io_error("write", path, errno));
    }
    text.remove_prefix(gsl::narrow_cast<std::size_t>(n));  // n >= 0 here
  }
  return {};
}

// What st_mode says a non-regular file is, for messages.
std::string_view kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// open(2) of a regular file and nothing else, with its fstat: O_NOFOLLOW refuses a symbolic
// link (which could lead to /dev/zero, or make O_CREAT create its target), O_NONBLOCK keeps a
// FIFO from blocking the open until a writer comes. A symbolic link or another kind of file is
// InvalidJson (what is there can be no document of the store); a failed call is IoFailure.
Result<std::pair<int, struct stat>> open_regular(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP) {
    return make_error(ErrorCode::InvalidJson, "kernel cache store: " + path.string() +
                                                  " is a symbolic link; the store opens only "
                                                  "regular files, never through a link");
  }
  if (fd < 0) {
    return std::unexpected(io_error("open", path, errno));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int error_number = errno;
    ::close(fd);
    return std::unexpected(io_error("stat", path, error_number));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::InvalidJson, "kernel cache store: " + path.string() + " is " +
                                                  std::string(kind_of(st.st_mode)) +
                                                  "; the store opens only regular files");
  }
  return std::pair{fd, st};
}

Result<void> sync_folder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return std::unexpected(io_error("open the folder", folder, errno));
  }
  const int rc = ::fsync(fd);
  const int error_number = errno;
  ::close(fd);
  if (rc != 0) {
    return std::unexpected(io_error("fsync the folder", folder, error_number));
  }
  return {};
}

}  // namespace

Result<FolderLock> FolderLock::acquire(const std::filesystem::path& folder,
                                       std::chrono::milliseconds patience) {
  const std::filesystem::path path = folder / lock_file_name;
  auto opened = open_regular(path, O_RDWR | O_CREAT);
  if (!opened && opened.error().code == ErrorCode::InvalidJson) {  // a link or no regular file
    return make_error(ErrorCode::IoFailure, opened.error().message +
                                                "; it is the store's lock file: remove it, the "
                                                "store makes a new one");
  }
  if (!opened) {
    return std::unexpected(opened.error());
  }
  const int fd = opened->first;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int error_number = errno;
      ::close(fd);
      return std::unexpected(io_error("lock", path, error_number));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      return make_error(ErrorCode::IoFailure, "kernel cache store: " + path.string() +
                                                  " is still locked by another " + "writer after " +
                                                  std::to_string(patience.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return FolderLock(fd);
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);  // closing the last descriptor of the open file releases the flock
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void remove_orphan_temporaries(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  // increment(ec), not a range-for: its operator++ throws.
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (is_temporary(it->path().filename().string())) {
      std::error_code removed;
      std::filesystem::remove(it->path(), removed);
    }
  }
}

void remove_orphan_temporaries_if_unlocked(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  while (!ec && it != std::filesystem::directory_iterator() &&
         !is_temporary(it->path().filename().string())) {
    it.increment(ec);
  }
  if (ec || it == std::filesystem::directory_iterator()) {
    return;  // no temporary (or no folder to list): no lock taken, no lock file made
  }
  if (auto lock = FolderLock::acquire(folder, std::chrono::milliseconds(0)); lock) {
    remove_orphan_temporaries(folder);
  }
}

Result<void> replace_file(const std::filesystem::path& path, std::string_view text) {
  // Unique among this process's threads (the counter) and other processes (the pid).
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return std::unexpected(io_error("create", temporary, errno));
  }
  auto written = write_all(fd, text, temporary);
  if (written && ::fsync(fd) != 0) {
    written = std::unexpected(io_error("fsync", temporary, errno));
  }
  if (::close(fd) != 0 && written) {
    written = std::unexpected(io_error("close", temporary, errno));
  }
  if (written && ::rename(temporary.c_str(), path.c_str()) != 0) {
    written = std::unexpected(io_error("rename into place", path, errno));
  }
  if (!written) {
    ::unlink(temporary.c_str());
    return written;
  }
  // The rename is durable only once the folder's entry is.
  return sync_folder(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
}

Result<std::string> read_file(const std::filesystem::path& path, std::size_t limit) {
  auto opened = open_regular(path, O_RDONLY);
  if (!opened) {
    return std::unexpected(opened.error());
  }
  const auto [fd, st] = *opened;
  if (static_cast<std::uintmax_t>(st.st_size) > limit) {
    ::close(fd);
    return make_error(ErrorCode::InvalidJson, "kernel cache store: " + path.string() + " has " +
                                                  std::to_string(st.st_size) +
                                                  " bytes, more than the " + std::to_string(limit) +
                                                  " a document may have");
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      const int error_number = errno;
      ::close(fd);
      return std::unexpected(io_error("read", path, error_number));
    }
    if (n == 0) {
      break;
    }
    // n > 0 here.
    const auto got = gsl::narrow_cast<std::size_t>(n);
    if (text.size() + got > limit) {  // it grew since the fstat
      ::close(fd);
      return make_error(ErrorCode::InvalidJson, "kernel cache store: " + path.string() +
                                                    " has more than the " + std::to_string(limit) +
                                                    " bytes a document may have");
    }
    text.append(buffer, got);
  }
  ::close(fd);
  return text;
}

}  // namespace dnngraph::detail
