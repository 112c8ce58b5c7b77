#include "process.h"

#include <signal.h>

namespace kvpool::testing {

Process::Process(const std::string& binary, std::vector<std::string> args, std::string name) {
  ChildOptions o;
  o.stop_grace = std::chrono::milliseconds(0);  // kill -9: tests restart nodes this way
  auto child = ChildProcess::Start(std::move(name), binary, std::move(args), o);
  if (child.ok()) {
    child_ = std::move(child).value();
  } else {
    start_error_ = child.status().ToString();
  }
}

int Process::Wait(std::chrono::milliseconds timeout) {
  if (!child_) return -1;
  if (!child_->WaitExit(timeout)) return -1;
  return child_->exit_status();
}

std::string Process::Log() const { return child_ ? child_->Log() : start_error_; }

RunResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout) {
  Process p(binary, args, "command");
  int code = p.Wait(timeout);
  if (code == -1) {
    p.Signal(SIGKILL);
    p.Wait(std::chrono::seconds(5));
  }
  return {code, p.Log()};
}

}  // namespace kvpool::testing
