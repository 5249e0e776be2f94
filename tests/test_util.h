#pragma once
// Shared test helpers.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace strata::testing {

// Runs fn, requires it to throw E, and checks the message starts with `prefix` (e.g. "[add]")
// and contains every fragment.
template <class E, class Fn>
std::string expect_error(Fn&& fn, std::string_view prefix, std::initializer_list<std::string_view> fragments = {}) {
  try {
    fn();
  } catch (const E& error) {
    std::string message = error.what();
    INFO("message: " << message);
    CHECK(message.rfind(prefix, 0) == 0);
    for (auto fragment : fragments) CHECK(message.find(fragment) != std::string::npos);
    return message;
  } catch (const std::exception& other) {
    FAIL("threw the wrong exception type: " << other.what());
    return {};
  }
  FAIL("did not throw; expected a message starting with " << prefix);
  return {};
}

}  // namespace strata::testing
