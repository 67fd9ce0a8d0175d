// Whether this test program is built with AddressSanitizer or ThreadSanitizer:
// their shadow memory reserves the address space, so tests that run under
// RLIMIT_AS skip themselves there.
#pragma once

namespace reliability_test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace reliability_test
