# ctest script: runs one of the guide's error examples as its reader would — the example
# with the guide's environment variables, then the `ember` commands on the files it
# announced — and checks each step's output against what docs/troubleshooting.md shows.
# Variables: MODE (backend_error | inductor_error | accuracy_dynamo | accuracy_aot |
# record_replay), EXAMPLE (the example program), EMBER (the ember tool), TOY_BACKEND
# (libtoy_backend.so), WORK_DIR (a scratch directory of this test only).

# run(EXPECT_STATUS ARGS...): runs ARGS, fails unless it exits with EXPECT_STATUS; sets
# `out` (stdout and stderr) in the caller.
function(run expect)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  message("$ ${ARGN}\n${o}${e}")
  if(NOT rc STREQUAL "${expect}")
    message(FATAL_ERROR "expected exit status ${expect}, got ${rc}: ${ARGN}")
  endif()
  set(out "${o}${e}" PARENT_SCOPE)
endfunction()

# expect(TEXT REGEX...): fails unless TEXT matches every REGEX.
function(expect text)
  foreach(re ${ARGN})
    if(NOT text MATCHES "${re}")
      message(FATAL_ERROR "expected the output to match '${re}'")
    endif()
  endforeach()
endfunction()

# expect_only_relu(REPRO): the repro's graph calls exactly one op, aten::relu.
function(expect_only_relu repro)
  file(STRINGS ${repro} calls REGEX " = aten::")
  list(LENGTH calls n)
  if(NOT n EQUAL 1 OR NOT calls MATCHES "aten::relu\\(")
    file(READ ${repro} text)
    message(FATAL_ERROR "expected ${repro} to call aten::relu alone, it calls ${n} ops:\n${text}")
  endif()
endfunction()

# A path the output announced after PREFIX (up to the end of its line).
function(announced prefix var)
  if(NOT out MATCHES "${prefix}([^\n]+)")
    message(FATAL_ERROR "the output names no file after '${prefix}'")
  endif()
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(env ${CMAKE_COMMAND} -E env EMBER_BASE_DIR=${WORK_DIR} TORCHINDUCTOR_CACHE_DIR=${WORK_DIR}/cache OMP_NUM_THREADS=2)

if(MODE STREQUAL "backend_error")
  # After dynamo, the failing graph is minified at once, inside the program.
  run(1 ${env} TORCHDYNAMO_REPRO_AFTER=dynamo ${EXAMPLE})
  expect("${out}" "BackendCompilerFailed: backend='custom' raised:" "toy_compiler: relu is not supported"
         "running the minifier on graph test_backend_error \\(5 ops\\)")
  announced("Minified repro: " repro)
  expect_only_relu(${repro})
  run(1 ${EMBER} repro ${repro} --backend-lib ${TOY_BACKEND})
  expect("${out}" "FAILS: compile error \\(RuntimeError\\): std::runtime_error: toy_compiler: relu is not supported"
         "the same failure as recorded")
elseif(MODE STREQUAL "inductor_error")
  # After aot the program writes a launcher; `ember minify` shrinks it, `ember repro` reruns it.
  run(1 ${env} TORCHDYNAMO_REPRO_AFTER=aot ${EXAMPLE})
  expect("${out}" "BackendCompilerFailed: backend='inductor' raised:" "does not compile")
  announced("wrote a minifier launcher: " launcher)
  run(0 ${env} ${EMBER} minify ${launcher})
  expect("${out}" "ember minify: 1 of [0-9]+ ops left")
  get_filename_component(dir ${launcher} DIRECTORY)
  expect_only_relu(${dir}/minified/repro.txt)
  run(1 ${env} ${EMBER} repro ${dir}/minified/repro.txt)
  expect("${out}" "FAILS: compile error \\(RuntimeError\\): inductor: the generated code of graph" "the same failure as recorded")
  # The bisector names the decision that brings the failure in: relu's lowering.
  run(1 ${env} ${EMBER} bisect ${launcher})
  expect("${out}" "FOUND: inductor_inner lowering #[0-9]+: aten::relu \\(%relu\\)")
elseif(MODE MATCHES "^accuracy_(dynamo|aot)$")
  # REPRO_LEVEL=4 compares each compiled graph with eager; the launcher minifies to the relu.
  run(1 ${env} TORCHDYNAMO_REPRO_AFTER=${CMAKE_MATCH_1} TORCHDYNAMO_REPRO_LEVEL=4 ${EXAMPLE})
  expect("${out}" "RuntimeError: Accuracy failed for graph .* \\(TORCHDYNAMO_REPRO_AFTER=${CMAKE_MATCH_1}, compared")
  announced("TORCHDYNAMO_REPRO_LEVEL=4 wrote a minifier launcher: " launcher)
  run(0 ${env} ${EMBER} minify ${launcher})
  expect("${out}" "ember minify: 1 of [0-9]+ ops left")
  get_filename_component(dir ${launcher} DIRECTORY)
  expect_only_relu(${dir}/minified/repro.txt)
  run(1 ${env} ${EMBER} repro ${dir}/minified/repro.txt)
  expect("${out}" "FAILS: accuracy: " "the same failure as recorded")
elseif(MODE STREQUAL "record_replay")
  run(0 ${env} ${EXAMPLE} ${WORK_DIR})
  expect("${out}" "WON'T CONVERT two_halves" "Execution record of two_halves written to"
         "replay raised RuntimeError: [^\n]*no data")
  announced("record: " record)
  # `ember replay` runs the program again; the frame still fails: exit status 1.
  run(1 ${EMBER} replay ${record})
  expect("${out}" "ember replay: running ${EXAMPLE} ${WORK_DIR} in "
         "\\[replay\\] the frame raised RuntimeError: [^\n]*no data" "\\[replay\\] the same error as recorded")
  run(2 ${EMBER} replay ${WORK_DIR}/no_such.record.safetensors)
  expect("${out}" "no_such.record.safetensors: no such file")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
