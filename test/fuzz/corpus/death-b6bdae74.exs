# ExZarr fuzz regression case: the VM dies in open: binary_alloc: Cannot allocate N bytes of memory (of type "binary").
# first seen at step {:open, []}: {:death, "binary_alloc: Cannot allocate 1099511627776 bytes of memory (of type \"binary\").\r | exit status 1"}
# written by hand: issue 11: a v2 dtype of 2^40 bytes
%{
  kind: :generated,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:resize, {:delta, [1]}}
  ],
  setup:
    {:store,
     [
       {".zarray",
        {:json,
         %{
           "chunks" => [2],
           "compressor" => :null,
           "dtype" => "|V1099511627776",
           "fill_value" => :null,
           "filters" => :null,
           "order" => "C",
           "shape" => [4],
           "zarr_format" => 2
         }}}
     ]}
}
