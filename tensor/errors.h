#pragma once
// Errors thrown by strata. Every message starts with "[op_name]".
#include <sstream>
#include <stdexcept>
#include <string>

namespace strata {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};
class ValueError : public Error {
 public:
  using Error::Error;
};
class TypeError : public Error {
 public:
  using Error::Error;
};
class IndexError : public Error {
 public:
  using Error::Error;
};
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

namespace detail {

template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
inline std::string str_cat() { return {}; }

template <class E, class... Args>
[[noreturn]] void throw_error(const Args&... args) {
  throw E(str_cat(args...));
}

[[noreturn]] void internal_assert_fail(const char* file, int line, const char* condition,
                                       const std::string& message);

}  // namespace detail
}  // namespace strata

// STRATA_CHECK(cond, "[op] message ", values...) throws strata::Error when cond is false.
#define STRATA_CHECK(cond, ...)                                     \
  do {                                                              \
    if (!(cond)) [[unlikely]]                                       \
      ::strata::detail::throw_error<::strata::Error>(__VA_ARGS__);  \
  } while (0)
#define STRATA_CHECK_VALUE(cond, ...)                                    \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::strata::detail::throw_error<::strata::ValueError>(__VA_ARGS__);  \
  } while (0)
#define STRATA_CHECK_TYPE(cond, ...)                                    \
  do {                                                                  \
    if (!(cond)) [[unlikely]]                                           \
      ::strata::detail::throw_error<::strata::TypeError>(__VA_ARGS__);  \
  } while (0)
#define STRATA_CHECK_INDEX(cond, ...)                                    \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::strata::detail::throw_error<::strata::IndexError>(__VA_ARGS__);  \
  } while (0)
#define STRATA_CHECK_NOT_IMPLEMENTED(cond, ...)                                    \
  do {                                                                             \
    if (!(cond)) [[unlikely]]                                                      \
      ::strata::detail::throw_error<::strata::NotImplementedError>(__VA_ARGS__);   \
  } while (0)
// For bugs in strata itself, never for user input. Throws (never aborts) so a bug
// surfaces as an exception a caller can report.
#define STRATA_INTERNAL_ASSERT(cond, ...)                                                 \
  do {                                                                                    \
    if (!(cond)) [[unlikely]]                                                             \
      ::strata::detail::internal_assert_fail(__FILE__, __LINE__, #cond,                   \
                                             ::strata::detail::str_cat(__VA_ARGS__));     \
  } while (0)
