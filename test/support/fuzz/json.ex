defmodule ExZarr.Fuzz.Json do
  @moduledoc """
  Encodes the JSON documents of fuzz cases, including text no JSON library writes: the fuzz
  generators describe documents as terms and this module turns them into bytes.

    * maps (any keys: strings are written as is, other keys with `inspect/1`), lists,
      integers of any size, finite floats, strings (raw bytes: invalid UTF-8 stays invalid),
      `:null`, `true`, `false`
    * `{:raw, text}`: `text` verbatim (`NaN`, `-Infinity`, `1e400`, `01`, a truncated object)
    * `{:pairs, [{key, value}]}`: an object with its keys in that order, duplicates kept
    * `{:nest, depth, value}`: `value` inside `depth` nested arrays (deep nesting without a
      deep term); `{:repeat, n, value}`: a list of `n` copies of `value`;
      `{:long_string, n}`: a string of `n` characters

      iex> ExZarr.Fuzz.Json.encode(%{"a" => [1, {:raw, "NaN"}, :null]})
      ~s({"a":[1,NaN,null]})
  """

  @type doc :: term()

  @doc "The JSON text of a document term (a binary)."
  @spec encode(doc()) :: binary()
  def encode(doc), do: IO.iodata_to_binary(enc(doc))

  defp enc(:null), do: "null"
  defp enc(true), do: "true"
  defp enc(false), do: "false"
  defp enc(n) when is_integer(n), do: Integer.to_string(n)
  defp enc(f) when is_float(f), do: :erlang.float_to_binary(f, [:short])
  defp enc(s) when is_binary(s), do: string(s)
  defp enc({:raw, text}), do: text
  defp enc({:pairs, pairs}), do: object(pairs)

  defp enc({:nest, depth, value}) when is_integer(depth) and depth >= 0,
    do: [:binary.copy("[", depth), enc(value), :binary.copy("]", depth)]

  defp enc({:repeat, n, value}) when is_integer(n) and n >= 0,
    do: ["[", Enum.intersperse(List.duplicate(enc(value), n), ","), "]"]

  defp enc({:long_string, n}) when is_integer(n) and n >= 0, do: [?", :binary.copy("x", n), ?"]

  defp enc(list) when is_list(list), do: ["[", Enum.intersperse(Enum.map(list, &enc/1), ","), "]"]
  defp enc(%{} = map), do: object(Enum.sort(Map.to_list(map)))
  defp enc(other), do: string(inspect(other))

  defp object(pairs),
    do: ["{", Enum.intersperse(Enum.map(pairs, fn {k, v} -> [key(k), ":", enc(v)] end), ","), "}"]

  defp key(k) when is_binary(k), do: string(k)
  defp key(k), do: string(inspect(k))

  defp string(s), do: [?", escape(s, []), ?"]

  defp escape(<<>>, acc), do: Enum.reverse(acc)
  defp escape(<<?", rest::binary>>, acc), do: escape(rest, ["\\\"" | acc])
  defp escape(<<?\\, rest::binary>>, acc), do: escape(rest, ["\\\\" | acc])

  defp escape(<<c, rest::binary>>, acc) when c < 0x20,
    do: escape(rest, [:io_lib.format("\\u~4.16.0B", [c]) | acc])

  defp escape(<<c, rest::binary>>, acc), do: escape(rest, [c | acc])
end
