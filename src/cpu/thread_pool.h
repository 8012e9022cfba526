// A small persistent pool of std::threads for the CPU backend. Workers are started on first use
// and kept; a call runs a job on `n` threads (the caller is thread 0) and returns when all are
// done. Concurrent calls from different user threads take turns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ctxattn {
namespace cpu {

class ThreadPool {
 public:
  static ThreadPool& instance();

  // Runs job(i) for i in [0, n) on n threads and waits for all of them.
  void run(int n, const std::function<void(int)>& job);

  ~ThreadPool();

 private:
  ThreadPool() = default;
  void worker_loop(int index);

  std::mutex call_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  int job_threads_ = 0;     // threads taking part in the current job, caller included
  int pending_ = 0;         // workers of the current job not finished yet
  uint64_t generation_ = 0; // bumped for every job so workers see each one once
  bool stop_ = false;
};

// Runs f(n) for every n in [0, count) on `threads` threads of the pool, each drawing the next
// index from a shared counter (uneven items balance themselves), and waits for all of them.
template <class F>
void run_items(int threads, size_t count, F&& f) {
  std::atomic<size_t> next{0};
  ThreadPool::instance().run(threads, [&](int) {
    for (size_t n = next++; n < count; n = next++) f(n);
  });
}

// Threads for a call: num_threads when > 0, else CTXATTN_NUM_THREADS when set to a positive
// integer, else the hardware concurrency.
int resolve_num_threads(int num_threads);

}  // namespace cpu
}  // namespace ctxattn
