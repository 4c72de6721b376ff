// clustersim: entry point. Maps exceptions to exit codes: 0 success, 2 bad input, 1 internal error.
#include <exception>
#include <iostream>

#include "core/errors.h"

int main(int, char**) {
  try {
    std::cout << "clustersim\n";
    return 0;
  } catch (const cs::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}
