# Writes ${OUT} with the source tree's git revision, only when it changed, so the measurements'
# metadata names the revision the binary was built from (not the one it was configured at).
execute_process(COMMAND git describe --always --dirty --abbrev=10 WORKING_DIRECTORY "${SRC}"
  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
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
