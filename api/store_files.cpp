// The kernel-cache store's file operations over POSIX calls.
#include "api/store_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

Result<void> write_all(int fd, std::string_view text, const std::filesystem::path& path) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return std::unexpected(io_error("write", path, errno));
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
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
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return std::unexpected(io_error("open the lock file", path, errno));
  }
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::unexpected(io_error("open", path, errno));
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
    if (text.size() + static_cast<std::size_t>(n) > limit) {
      ::close(fd);
      return make_error(ErrorCode::IoFailure, "kernel cache store: " + path.string() +
                                                  " is larger than " + std::to_string(limit) +
                                                  " bytes");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace dnngraph::detail
