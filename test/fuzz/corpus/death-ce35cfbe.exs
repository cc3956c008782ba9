# ExZarr fuzz regression case: the VM dies in seed_write: Floating point exception
# first seen at step :seed_write: {:death, "Floating point exception | exit status 136"}
# written by hand: issue 11: blosc typesize 2^31 given to create
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:resize, {:delta, [1]}}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       shape: {100},
       chunks: {100},
       dtype: :int32,
       compressor: %{id: "blosc", typesize: 2_147_483_648}
     ]}
}
