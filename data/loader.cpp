#include "data/loader.h"

#include <algorithm>
#include <chrono>

namespace autotune::data {

BatchLoader::BatchLoader(int num_workers, int prefetch, Fill fill) : fill_(std::move(fill)) {
  capacity_ = static_cast<std::size_t>(std::max(1, prefetch)) * static_cast<std::size_t>(std::max(1, num_workers));
  const std::size_t ring = num_workers > 0 ? capacity_ + 1 : 1;  // + the slot the consumer holds
  slots_.resize(ring);
  state_.assign(ring, State::empty);
  error_.resize(ring);
  for (int i = 0; i < num_workers; ++i) threads_.emplace_back([this] { work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& t : threads_) t.join();
}

void BatchLoader::work() {
  for (;;) {
    std::uint64_t k;
    std::size_t s;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_work_.wait(l, [&] { return stop_ || claim_ < next_ + capacity_; });
      if (stop_) return;
      k = claim_++;
      s = k % slots_.size();
      state_[s] = State::filling;
    }
    State done = State::ready;
    std::exception_ptr err;
    const auto f0 = std::chrono::steady_clock::now();
    try {
      slots_[s].index = k;
      fill_(k, slots_[s]);
    } catch (...) {
      err = std::current_exception();
      done = State::failed;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      state_[s] = done;
      error_[s] = err;
      busy_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
    }
    cv_ready_.notify_all();
  }
}

double BatchLoader::busy_seconds() const {
  std::lock_guard<std::mutex> l(mu_);
  return busy_s_;
}

const BatchSlot& BatchLoader::next() {
  const std::uint64_t k = next_;
  if (threads_.empty()) {  // num_workers = 0: fill in this thread, the data phase is all wait
    const auto t0 = std::chrono::steady_clock::now();
    slots_[0].index = k;
    fill_(k, slots_[0]);
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++next_;
    return slots_[0];
  }
  const std::size_t s = k % slots_.size();
  std::unique_lock<std::mutex> l(mu_);
  ++next_;  // batch k−1's slot is free again; the window moves on
  cv_work_.notify_all();
  const auto t0 = std::chrono::steady_clock::now();
  cv_ready_.wait(l, [&] { return (state_[s] == State::ready || state_[s] == State::failed) && slots_[s].index == k; });
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (state_[s] == State::failed) {
    std::exception_ptr e = error_[s];
    state_[s] = State::empty;
    std::rethrow_exception(e);
  }
  state_[s] = State::empty;  // held by the consumer until the next call (no worker can claim it yet)
  return slots_[s];
}

}  // namespace autotune::data
