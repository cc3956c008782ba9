defmodule ExZarr.Metadata.Attributes do
  @moduledoc """
  User attributes of arrays and groups: a JSON object stored in `.zattrs` (Zarr v2) or under
  `attributes` in `zarr.json` (Zarr v3).

  Values are JSON values of any shape: maps with string keys (atom keys are turned into
  strings), lists, strings, numbers, booleans and `nil` for JSON null. Atoms other than
  `true`, `false` and `nil` are stored as strings. This module holds the pure part (checking
  and changing an attribute map); `ExZarr.Array` and `ExZarr.Group` persist the result.

      iex> ExZarr.Metadata.Attributes.change(%{"a" => 1}, {:update, %{b: [1, nil]}})
      {:ok, %{"a" => 1, "b" => [1, nil]}}
      iex> ExZarr.Metadata.Attributes.change(%{"a" => 1, "b" => 2}, {:delete, ["a", "zz"]})
      {:ok, %{"b" => 2}}
      iex> ExZarr.Metadata.Attributes.change(%{}, {:set, %{"f" => self()}})
      {:error, {:invalid_attributes, %{"f" => self()}}}
      iex> ExZarr.Metadata.Attributes.change(%{"a" => 1}, {:delete, ["a" | "b"]})
      {:error, {:invalid_attribute_keys, ["a" | "b"]}}
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
    if not List.improper?(keys) and Enum.all?(keys, &(is_binary(&1) or is_atom(&1))),
      do: {:ok, Map.drop(current, Enum.map(keys, &to_string/1))},
      else: {:error, {:invalid_attribute_keys, keys}}
  end

  def change(_current, other), do: {:error, {:invalid_attribute_change, other}}

  @doc """
  Checks that a term is a JSON object and returns it in stored form: string keys, atoms as
  strings but `nil` (JSON null) and the non-finite `:nan`, `:infinity`, `:neg_infinity`
  (written as zarr-python writes them, see `ExZarr.JSON`).

      iex> ExZarr.Metadata.Attributes.normalize(%{unit: :micrometer, scale: [0.5, 1]})
      {:ok, %{"scale" => [0.5, 1], "unit" => "micrometer"}}
  """
  @spec normalize(term()) :: {:ok, map()} | {:error, {:invalid_attributes, term()}}
  def normalize(%{} = attrs) when not is_struct(attrs) do
    case ExZarr.JSON.from_term(attrs) do
      {:ok, json} -> {:ok, ExZarr.Metadata.attributes_from_json(json)}
      :error -> {:error, {:invalid_attributes, attrs}}
    end
  end

  def normalize(other), do: {:error, {:invalid_attributes, other}}
end
