// A move-only `void()` callable with a small inline buffer, so that scheduling an event with a
// lambda that captures a few words does not allocate. Larger callables go to the heap.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace cs::sim {

class Callback {
 public:
  static constexpr std::size_t kInlineBytes = 48;

  Callback() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Callback>>>
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<Fn>) {
      ::new (static_cast<void*>(buf_)) Fn(std::forward<F>(f));
      ops_ = &inline_ops<Fn>;
    } else {
      ::new (static_cast<void*>(buf_)) Fn*(new Fn(std::forward<F>(f)));
      ops_ = &heap_ops<Fn>;
    }
  }
  Callback(Callback&& o) noexcept { take(std::move(o)); }
  Callback& operator=(Callback&& o) noexcept {
    if (this != &o) {
      reset();
      take(std::move(o));
    }
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->call(buf_); }
  void reset() {
    if (ops_) ops_->destroy(buf_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* dst, void* src);  // move-constructs into dst and destroys src
    void (*destroy)(void*);
  };
  template <class Fn>
  static constexpr Ops inline_ops{
      [](void* p) { (*static_cast<Fn*>(p))(); },
      [](void* dst, void* src) {
        ::new (dst) Fn(std::move(*static_cast<Fn*>(src)));
        static_cast<Fn*>(src)->~Fn();
      },
      [](void* p) { static_cast<Fn*>(p)->~Fn(); }};
  template <class Fn>
  static constexpr Ops heap_ops{
      [](void* p) { (**static_cast<Fn**>(p))(); },
      [](void* dst, void* src) { ::new (dst) Fn*(*static_cast<Fn**>(src)); },
      [](void* p) { delete *static_cast<Fn**>(p); }};

  void take(Callback&& o) noexcept {
    ops_ = o.ops_;
    if (ops_) ops_->move(buf_, o.buf_);
    o.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace cs::sim
