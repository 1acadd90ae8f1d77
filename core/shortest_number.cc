#include "core/shortest_number.h"

#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace horde {

std::string ShortestNumber(double v) {
  std::ostringstream s;
  for (int precision = 6; precision <= 17; ++precision) {
    s.str("");
    s << std::setprecision(precision) << v;
    if (std::strtod(s.str().c_str(), nullptr) == v) break;
  }
  return s.str();
}

}  // namespace horde
