#include "cpu/thread_pool.h"

#include <cstdlib>

namespace ctxattn {
namespace cpu {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && index < job_threads_); });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& job) {
  if (n <= 1) {
    job(0);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Worker i serves thread index i; index 0 is the caller.
    while (static_cast<int>(workers_.size()) < n - 1) {
      const int index = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, index] { worker_loop(index); });
    }
    job_ = &job;
    job_threads_ = n;
    pending_ = n - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  job(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

int resolve_num_threads(int num_threads) {
  if (num_threads > 0) return num_threads;
  if (const char* env = std::getenv("CTXATTN_NUM_THREADS")) {
    const long v = std::strtol(env, nullptr, 10);
    if (v > 0) return static_cast<int>(v);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace cpu
}  // namespace ctxattn
