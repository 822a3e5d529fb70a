#pragma once
// A multi-threaded batch loader, LibTorch-free. `num_workers` threads (0 = in the consumer's thread)
// fill batches into a ring of reusable slots; at most `prefetch` × max(1, num_workers) batches are in
// flight ahead of the consumer; batches are delivered strictly in order (batch k is the same whatever
// the worker count); a worker's exception is rethrown in the consumer for the batch it hit; the
// destructor stops and joins the workers without waiting for the ones ahead (no hang on early stop).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace autotune::data {

/// One batch's storage, reused: the fill function sizes it once and overwrites it after.
struct BatchSlot {
  std::vector<std::uint8_t> bytes;  ///< pixels / features
  std::vector<std::int64_t> ints;   ///< labels / token ids
  std::vector<float> floats;        ///< per-sample parameters (crop windows for augmentation on the device)
  std::uint64_t index = 0;
};

class BatchLoader {
 public:
  using Fill = std::function<void(std::uint64_t batch_index, BatchSlot& slot)>;
  BatchLoader(int num_workers, int prefetch, Fill fill);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// The next batch, in order. The reference stays valid until the next call.
  const BatchSlot& next();
  /// Seconds the consumer spent waiting for batches (the data phase's share that the workers did
  /// not hide).
  double wait_seconds() const { return wait_s_; }
  /// Seconds the loader threads spent filling batches (all threads together): with the wall time,
  /// the loader's thread utilisation.
  double busy_seconds() const;
  std::uint64_t delivered() const { return next_; }
  int num_workers() const { return static_cast<int>(threads_.size()); }

 private:
  enum class State { empty, filling, ready, failed };
  void work();

  Fill fill_;
  std::size_t capacity_ = 1;
  std::vector<BatchSlot> slots_;
  std::vector<State> state_;
  std::vector<std::exception_ptr> error_;
  mutable std::mutex mu_;
  std::condition_variable cv_work_, cv_ready_;
  std::uint64_t next_ = 0;   ///< the batch the consumer asks for next
  std::uint64_t claim_ = 0;  ///< the next batch a worker takes
  bool stop_ = false;
  double wait_s_ = 0;
  double busy_s_ = 0;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace autotune::data
