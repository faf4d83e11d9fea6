// A notice for work that is usually quick and sometimes long (a first compile on a device): if the
// object still lives `after_ms` after its construction, a helper thread passes `message` to `log`
// once. The destructor stops the helper; nothing is logged for work that ends in time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace oi {

class SlowNotice {
 public:
  SlowNotice(std::function<void(const std::string&)> log, std::string message, int after_ms) {
    if (!log) return;
    helper_ = std::thread([this, log = std::move(log), message = std::move(message), after_ms] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::milliseconds(after_ms), [this] { return done_; })) log(message);
    });
  }
  ~SlowNotice() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    if (helper_.joinable()) helper_.join();
  }
  SlowNotice(const SlowNotice&) = delete;
  SlowNotice& operator=(const SlowNotice&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread helper_;
};

}  // namespace oi
