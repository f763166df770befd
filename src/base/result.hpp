// result<T>: a value or a vks::error (a small std::expected for C++20). result<void> holds
// only the error state. Accessing the wrong alternative is a broken invariant and asserts.
#pragma once

#include <utility>
#include <variant>

#include "base/assert.hpp"
#include "base/error.hpp"

namespace vks {

struct unexpected {
  error err;
};
inline unexpected fail(errc c, std::string msg, std::string param = {}) {
  return unexpected{make_error(c, std::move(msg), std::move(param))};
}
inline unexpected fail(error e) { return unexpected{std::move(e)}; }

template <class T>
class [[nodiscard]] result {
 public:
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}  // NOLINT: implicit by design
  result(unexpected u) : v_(std::in_place_index<1>, std::move(u.err)) {}  // NOLINT
  template <class... A>
  explicit result(std::in_place_t, A&&... a) : v_(std::in_place_index<0>, std::forward<A>(a)...) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { VKS_ASSERT(ok(), "result holds an error"); return std::get<0>(v_); }
  const T& value() const& { VKS_ASSERT(ok(), "result holds an error"); return std::get<0>(v_); }
  T&& value() && { VKS_ASSERT(ok(), "result holds an error"); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const vks::error& error() const& { VKS_ASSERT(!ok(), "result holds a value"); return std::get<1>(v_); }
  vks::error&& error() && { VKS_ASSERT(!ok(), "result holds a value"); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, vks::error> v_;
};

template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(unexpected u) : err_(std::move(u.err)), ok_(false) {}  // NOLINT
  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const vks::error& error() const& { VKS_ASSERT(!ok_, "result holds a value"); return err_; }
  vks::error&& error() && { VKS_ASSERT(!ok_, "result holds a value"); return std::move(err_); }

 private:
  vks::error err_;
  bool ok_ = true;
};

inline result<void> ok() { return {}; }

}  // namespace vks

// Propagate an error from an expression returning result<...>; yields nothing.
#define VKS_TRY(expr)                                      \
  do {                                                     \
    auto vks_try_r_ = (expr);                              \
    if (!vks_try_r_) return ::vks::fail(std::move(vks_try_r_).error()); \
  } while (0)
