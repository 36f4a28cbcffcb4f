// Task<T>: the coroutine type of transactions and of the engine's operations.
//
// Lazy: a Task does nothing until it is awaited (or the scheduler resumes it). Move-only: the
// Task object owns its coroutine frame and destroys it when it goes away, finished or not, which
// destroys every frame it is suspended inside (the awaited operation and its helpers) — so a
// transaction abandoned mid-operation releases everything it held. Awaiting a Task transfers
// control to it symmetrically (no stack growth) and it transfers back to its awaiter when done.
//
// Frames come from the current worker's frame allocator (size classes, no global heap) when the
// Task is created on a worker thread, from the heap otherwise. A frame must be destroyed on the
// thread that created it; transactions never migrate between workers, so this always holds.
//
// Lifetime rule: a coroutine's parameters are copied into its frame, but references and views
// stay references. Pass by value whatever must outlive the caller's full-expression, unless the
// Task is awaited at once (`co_await f(view)` keeps the caller's temporaries alive until it
// finishes). Exceptions must not cross co_await: an escaping exception terminates.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace braid {

namespace detail {
// Per-worker frame allocation (src/runtime/frame_allocator.cc).
void* frame_allocate(std::size_t bytes);
void frame_deallocate(void* frame, std::size_t bytes) noexcept;

struct PromiseBase {
  std::coroutine_handle<> continuation = std::noop_coroutine();

  static void* operator new(std::size_t bytes) { return frame_allocate(bytes); }
  static void operator delete(void* frame, std::size_t bytes) noexcept {
    frame_deallocate(frame, bytes);
  }

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
      return h.promise().continuation;
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() const noexcept { return {}; }
  [[noreturn]] void unhandled_exception() const noexcept { std::terminate(); }
};

template <typename T>
struct Promise : PromiseBase {
  Promise() = default;
  Promise(const Promise&) = delete;
  ~Promise() {
    if (has_value) reinterpret_cast<T*>(storage)->~T();
  }
  template <typename U>
  void return_value(U&& value) {
    ::new (static_cast<void*>(storage)) T(std::forward<U>(value));
    has_value = true;
  }
  T take() { return std::move(*reinterpret_cast<T*>(storage)); }

  alignas(T) unsigned char storage[sizeof(T)];
  bool has_value = false;
};

template <>
struct Promise<void> : PromiseBase {
  void return_void() const noexcept {}
  void take() const noexcept {}
};
}  // namespace detail

template <typename T = void>
class [[nodiscard]] Task {
 public:
  struct promise_type : detail::Promise<T> {
    Task get_return_object() {
      return Task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const { return handle_ != nullptr; }
  bool done() const { return handle_.done(); }
  Handle handle() const { return handle_; }
  // The result of a finished Task (once).
  T take_result() { return handle_.promise().take(); }
  void reset() {
    if (handle_) std::exchange(handle_, nullptr).destroy();
  }

  // co_await task: starts it, resumes the awaiter with its result when it finishes.
  auto operator co_await() && noexcept { return Awaiter{handle_}; }
  auto operator co_await() & noexcept { return Awaiter{handle_}; }

 private:
  struct Awaiter {
    Handle h;
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
      h.promise().continuation = awaiter;
      return h;
    }
    T await_resume() { return h.promise().take(); }
  };

  explicit Task(Handle h) : handle_(h) {}
  Handle handle_ = nullptr;
};

}  // namespace braid
