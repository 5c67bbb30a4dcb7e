# The CPU held-out validation of the cost model (scripts/validate-cpu.sh): profiles the
# calibration grid (the quick preset's points) and configs/grids/holdout-cpu.json (under a
# minute on two quiet cores), calibrates on the first and validates on the second with a
# median-error bound of 15% (CI timings are noisy). Label `slow`: `ctest -LE slow` skips it.
# Include from tests/cli/CMakeLists.txt:
#   include("${CMAKE_CURRENT_SOURCE_DIR}/validate_cpu.cmake")
add_test(NAME cli.validate_cpu
  COMMAND "${MODSIM_SOURCE_DIR}/scripts/validate-cpu.sh" --modsim "$<TARGET_FILE:modsim>" --max-error 15)
set_tests_properties(cli.validate_cpu PROPERTIES LABELS slow TIMEOUT 900 RUN_SERIAL TRUE)
