// Errors in Loom are exceptions of type loom::Error inside the core and C++
// plugins; they never cross the C plugin boundary (see loom/plugin.h).  A
// message says what is wrong and where; subclasses add structured context.
#ifndef LOOM_SUPPORT_ERROR_H_
#define LOOM_SUPPORT_ERROR_H_

#include <sstream>
#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Wrong type of a value: an Any cast, a function argument.
class TypeError : public Error {
 public:
  using Error::Error;
};

// A name that is not registered (function, type, plugin, ...).
class LookupError : public Error {
 public:
  using Error::Error;
};

// An error in some text input, located as "SOURCE:LINE:COL".
class ParseError : public Error {
 public:
  ParseError(const std::string& source, int line, int column, const std::string& message)
      : Error(source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message),
        message_(message),
        line_(line),
        column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }
  // The message without the location.
  const std::string& message() const { return message_; }

 private:
  std::string message_;
  int line_, column_;
};

// An error in a YAML config (a ParseError: the location is in the file).
class ConfigError : public ParseError {
 public:
  using ParseError::ParseError;
};

// Type inference found problems (each with its location in the message).
class TypeInferenceError : public Error {
 public:
  using Error::Error;
};

// The text a user sees for any exception that reaches a command or the
// Python API: a loom::Error's own message; for the C++ library's
// exceptions, what happened in words, not its internal text
// ("std::bad_alloc", "basic_string::_M_create", "stoll").
std::string error_message(const std::exception& e);

namespace detail {
// Builds a message with operator<< and throws it as ErrorType.
template <class ErrorType>
class ErrorBuilder {
 public:
  template <class T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  [[noreturn]] void raise() { throw ErrorType(stream_.str()); }

 private:
  std::ostringstream stream_;
};
struct Raiser {
  template <class ErrorType>
  [[noreturn]] void operator&(ErrorBuilder<ErrorType>& builder) {
    builder.raise();
  }
};
}  // namespace detail

}  // namespace loom

// LOOM_THROW(TypeError) << "expected int, got " << kind;
#define LOOM_THROW(ErrorType) ::loom::detail::Raiser() & ::loom::detail::ErrorBuilder<::loom::ErrorType>()

// LOOM_CHECK(cond) << "message";  -- an internal invariant, reported as Error.
#define LOOM_CHECK(cond) \
  if (!(cond)) LOOM_THROW(Error) << __FILE__ << ":" << __LINE__ << ": check failed: " #cond ": "

#endif  // LOOM_SUPPORT_ERROR_H_
