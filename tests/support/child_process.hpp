// A program run in a child process, its standard output collected: for tests of what happens in
// another process (a libcudnn found once per process, a kernel cache saved by another one). Its
// standard error stays this process's.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX names it so

namespace dnngraph::testing {

struct ChildOutcome {
  std::string ended = "not started";  // "exit 0", "signal 11", or why it did not start
  int exit_status = -1;               // when it exited, else -1
  std::string output;                 // what it wrote to its standard output
};

// This process's environment, NAME=VALUE each, as run_process takes one.
[[nodiscard]] inline std::vector<std::string> this_environment() {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    environment.emplace_back(*e);
  }
  return environment;
}

// Runs args[0] with the arguments `args` (args[0] included) and the environment `environment`
// and waits for it to end.
[[nodiscard]] inline ChildOutcome run_process(std::vector<std::string> args,
                                              std::vector<std::string> environment) {
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : environment) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  ChildOutcome outcome;
  std::array<int, 2> pipe_fds{};
  if (pipe(pipe_fds.data()) != 0) {
    outcome.ended = "not started: pipe() failed";
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    outcome.ended = "not started: posix_spawn " + args[0] + ": error " + std::to_string(spawned);
  } else {
    std::array<char, 4096> buffer{};
    ssize_t n = 0;
    while ((n = read(pipe_fds[0], buffer.data(), buffer.size())) > 0) {
      outcome.output.append(buffer.data(), static_cast<std::size_t>(n));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) {
      outcome.exit_status = WEXITSTATUS(status);
      outcome.ended = "exit " + std::to_string(outcome.exit_status);
    } else {
      outcome.ended = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                          : "wait status " + std::to_string(status);
    }
  }
  close(pipe_fds[0]);
  return outcome;
}

}  // namespace dnngraph::testing
