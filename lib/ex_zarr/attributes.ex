defmodule ExZarr.Attributes do
  @moduledoc """
  User attributes of arrays and groups: a JSON object stored in `.zattrs` (Zarr v2) or under
  `attributes` in `zarr.json` (Zarr v3).

  Values are JSON values of any shape: maps with string keys (atom keys are turned into
  strings), lists, strings, numbers, booleans and `nil` for JSON null. Atoms other than
  `true`, `false` and `nil` are stored as strings. This module holds the pure part (checking
  and changing an attribute map); `ExZarr.Array` and `ExZarr.Group` persist the result.

      iex> ExZarr.Attributes.change(%{"a" => 1}, {:update, %{b: [1, nil]}})
      {:ok, %{"a" => 1, "b" => [1, nil]}}
      iex> ExZarr.Attributes.change(%{"a" => 1, "b" => 2}, {:delete, ["a", "zz"]})
      {:ok, %{"b" => 2}}
      iex> ExZarr.Attributes.change(%{}, {:set, %{"f" => self()}})
      {:error, {:invalid_attributes, %{"f" => self()}}}
  """

  @typedoc "A change: replace all, merge at the top level, or remove keys."
  @type change :: {:set, map()} | {:update, map()} | {:delete, [String.t() | atom()]}

  @doc """
  Applies a change to an attribute map. `{:update, map}` merges at the top level (a key given
  replaces the old value, as zarr-python's `attrs.update`); deleting a key that is not there is
  not an error.
  """
  @spec change(map(), change()) :: {:ok, map()} | {:error, term()}
  def change(_current, {:set, new}), do: normalize(new)

  def change(current, {:update, new}) do
    with {:ok, new} <- normalize(new), do: {:ok, Map.merge(current, new)}
  end

  def change(current, {:delete, keys}) when is_list(keys) do
    if Enum.all?(keys, &(is_binary(&1) or is_atom(&1))),
      do: {:ok, Map.drop(current, Enum.map(keys, &to_string/1))},
      else: {:error, {:invalid_attribute_keys, keys}}
  end

  def change(_current, other), do: {:error, {:invalid_attribute_change, other}}

  @doc """
  Checks that a term is a JSON object and returns it in stored form (string keys, atoms as
  strings).

      iex> ExZarr.Attributes.normalize(%{unit: :micrometer, scale: [0.5, 1]})
      {:ok, %{"scale" => [0.5, 1], "unit" => "micrometer"}}
  """
  @spec normalize(term()) :: {:ok, map()} | {:error, {:invalid_attributes, term()}}
  def normalize(%{} = attrs) when not is_struct(attrs) do
    case json(attrs) do
      {:ok, value} -> {:ok, value}
      :error -> {:error, {:invalid_attributes, attrs}}
    end
  end

  def normalize(other), do: {:error, {:invalid_attributes, other}}

  defp json(value) when is_nil(value) or is_boolean(value) or is_number(value), do: {:ok, value}
  defp json(atom) when is_atom(atom), do: {:ok, Atom.to_string(atom)}

  defp json(string) when is_binary(string),
    do: if(String.valid?(string), do: {:ok, string}, else: :error)

  defp json(list) when is_list(list), do: all(list, [], &json/1)

  defp json(%{} = map) when not is_struct(map) do
    with {:ok, pairs} <- all(Map.to_list(map), [], &pair/1), do: {:ok, Map.new(pairs)}
  end

  defp json(_other), do: :error

  defp pair({key, value}) when is_atom(key) and not is_nil(key) and not is_boolean(key),
    do: pair({Atom.to_string(key), value})

  defp pair({key, value}) when is_binary(key) do
    with true <- String.valid?(key), {:ok, value} <- json(value) do
      {:ok, {key, value}}
    else
      _ -> :error
    end
  end

  defp pair(_other), do: :error

  defp all([], acc, _fun), do: {:ok, Enum.reverse(acc)}

  defp all([item | rest], acc, fun) do
    case fun.(item) do
      {:ok, value} -> all(rest, [value | acc], fun)
      :error -> :error
    end
  end

  # The tail of an improper list.
  defp all(_tail, _acc, _fun), do: :error
end
