# Writes ${OUT} with the source tree's git revision, only when it changed, so the binary and the
# measurements' metadata name the revision it was built from (not the one it was configured at):
# the commit's hash (10 digits), "-dirty" when tracked files had changes, "unknown" when the
# sources are not a git checkout (a tarball, even one unpacked inside another repository).
set(rev "")
if(EXISTS "${SRC}/.git")
  execute_process(COMMAND git describe --always --dirty --abbrev=10 --exclude=* WORKING_DIRECTORY "${SRC}"
    OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT rev)
  set(rev "unknown")
endif()
set(text "#pragma once\n#define MODSIM_GIT_REVISION \"${rev}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
