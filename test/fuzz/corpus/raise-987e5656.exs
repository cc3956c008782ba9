# ExZarr fuzz regression case: raises :exit in ?
# first seen at step {:chunk_stream, [timeout: nil]}: {:raise, %{frame: "?", kind: :exit, message: "{:badarg, [{:erlang, :send_after, [nil, #PID<0.10430.0>, ...], [error_info: %{...}]}, {Task.Supervised, :stream_monitor_loop, 2, [...]}]}"}}
# found as case 927 of seed 1 (EXZARR_FUZZ_SEED=1), 22 shrinks
%{
  kind: :mutated,
  mutations: [{:doc, 0, 0, :delete}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:get_slice, {:box, 0, [], false}},
    {:chunk_stream, [timeout: -1]},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {1},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
