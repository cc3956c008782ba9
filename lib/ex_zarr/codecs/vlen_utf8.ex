defmodule ExZarr.Codecs.VlenUtf8 do
  @moduledoc """
  The `vlen-utf8` codec (array->bytes) for `:string` arrays: v3 `{"name": "vlen-utf8"}`, v2
  the `{"id": "vlen-utf8"}` object codec of a `"|O"` array. Items are UTF-8 strings, checked
  on encode and decode; the layout is described in `ExZarr.Codecs.VlenLayout`.

      iex> spec = %{shape: {2}, dtype: :string, fill_value: "", decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.VlenUtf8.init(%{}, spec)
      iex> {:ok, iodata} = ExZarr.Codecs.VlenUtf8.encode(["a", "é"], s)
      iex> ExZarr.Codecs.VlenUtf8.decode(IO.iodata_to_binary(iodata), s)
      {:ok, {"a", "é"}}
  """
  use ExZarr.Codecs.VlenLayout, name: "vlen-utf8", dtype: :string, utf8: true
end
