#include "core/version.hpp"

#include "git_revision.hpp"  // generated: MODSIM_GIT_REVISION

namespace modsim {

const build_info& build() {
  static const build_info info{MODSIM_VERSION, MODSIM_GIT_REVISION};
  return info;
}

}  // namespace modsim
