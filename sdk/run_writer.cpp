#include "run_writer.h"

#include <exception>
#include <utility>

namespace nanscope::sdk {

RunWriter::RunWriter() : thread_([this] { run(); }) {}

RunWriter::~RunWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void RunWriter::post(std::function<void()> write) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(write));
  }
  wake_.notify_one();
}

void RunWriter::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::string RunWriter::take_error() {
  std::lock_guard lock(mutex_);
  std::string all;
  if (errors_.size() > 1) all = std::to_string(errors_.size()) + " writes failed: ";
  for (std::size_t i = 0; i < errors_.size(); ++i) all += (i ? "; " : "") + errors_[i];
  errors_.clear();
  return all;
}

int RunWriter::pending() {
  std::lock_guard lock(mutex_);
  return static_cast<int>(queue_.size()) + (busy_ ? 1 : 0);
}

void RunWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything was written
    std::function<void()> write = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::string failed;
    try {
      write();
    } catch (const std::exception& e) {
      failed = e.what();
    }
    lock.lock();
    busy_ = false;
    if (!failed.empty()) errors_.push_back(std::move(failed));
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace nanscope::sdk
